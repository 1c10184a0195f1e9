package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

func (s *Server) validateCRD(w http.ResponseWriter, r *http.Request) error {
	var req api.ValidateRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	name := r.PathValue("name")
	ctx, span := telemetry.Tracer().Start(r.Context(), "crd.validate")
	defer span.End()
	span.SetAttributes(attribute.String("crd", name))

	c, err := s.resolveCandidate(ctx, name, req)
	if err != nil {
		return err
	}
	targets, err := s.targetClusters(ctx, req.Clusters)
	if err != nil {
		return err
	}
	report := api.ValidationReport{CRD: name, To: api.CRDRevision{Version: c.label, Operator: c.opName, Digest: c.digest, CreatedAt: c.created,
		Dropped: c.dropped, MigrationNote: noteOut(c.toNote)}, Changes: []api.SchemaChange{}, Clusters: make([]api.ClusterCheck, len(targets)),
		MigrationNotes: c.notes}
	if err := s.compareWithBase(ctx, c, &report); err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.ClusterConcurrency)
	for i, cl := range targets {
		g.Go(func() error {
			report.Clusters[i] = s.checkCluster(gctx, cl, c)
			return nil
		})
	}
	_ = g.Wait()

	usedInProduction := false
	for _, cc := range report.Clusters {
		if len(cc.InvalidObjects) > 0 {
			report.Breaking = true
		}
		// A Production cluster that could not be checked counts as using the CRD.
		if cc.Environment == string(store.EnvironmentProduction) && (cc.Installed || cc.Error != "") {
			usedInProduction = true
		}
	}
	report.ApprovalRequired = report.Breaking && usedInProduction
	if c.dropped {
		report.Changes = append(report.Changes, api.SchemaChange{Kind: "crdDropped", Breaking: report.Breaking,
			Message: fmt.Sprintf("version %s of %s no longer ships CRD %s: breaking where a cluster stores objects of it", c.label, c.opName, name)})
	}
	if report.From != nil {
		approvals, err := s.store.CRDApprovalList(ctx, name)
		if err != nil {
			return err
		}
		report.Approved = slices.ContainsFunc(approvals, func(a *store.CRDApproval) bool {
			return a.ToDigest == c.digest && a.FromDigest == report.From.Digest
		})
	}
	result := "compatible"
	if report.Breaking {
		result = "breaking"
	}
	telemetry.CRDValidated(result)
	s.log.InfoContext(ctx, "server: Validated CRD", "crd", name, "operatorName", c.opName, "version", c.label,
		"breaking", report.Breaking, "clusters", len(targets), "approvalRequired", report.ApprovalRequired)
	clusterNames := make([]string, len(targets))
	for i, t := range targets {
		clusterNames[i] = t.Name
	}
	s.audit.Record(ctx, audit.Entry{Action: "crd.validate", TargetKind: "crd", TargetName: name, Result: audit.Success,
		Details: map[string]any{"to": c.label, "breaking": report.Breaking, "clusters": clusterNames}})
	writeJSON(ctx, s.log, w, http.StatusOK, report)
	return nil
}

// targetClusters returns the named clusters (each must exist) or, with none named, every
// registered cluster.
func (s *Server) targetClusters(ctx context.Context, names []string) ([]*store.Cluster, error) {
	if len(names) > 0 {
		out := make([]*store.Cluster, 0, len(names))
		for i, n := range names {
			c, err := s.store.ClusterGetByName(ctx, n)
			if errors.Is(err, store.ErrNotFound) {
				return nil, errInvalid(fmt.Sprintf("clusters[%d]", i), "no cluster %q is registered", n)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	var out []*store.Cluster
	after := ""
	for {
		page, err := s.store.ClusterList(ctx, &store.ClusterListParams{After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < store.MaxLimit {
			return out, nil
		}
		after = page[len(page)-1].Name
	}
}

// checkCluster checks one cluster's existing objects of the CRD against the candidate schema. A
// cluster that cannot be reached is reported, not fatal: the others still answer.
func (s *Server) checkCluster(ctx context.Context, cl *store.Cluster, c *candidate) api.ClusterCheck {
	out := api.ClusterCheck{Cluster: cl.Name, Environment: string(cl.Environment), InvalidObjects: []api.InvalidObject{}}
	cfg, err := s.clusters.RESTConfig(ctx, cl.Name)
	if err != nil {
		out.Error = "connecting: " + safeMessage(err)
		return out
	}
	var res *crds.Existing
	if c.dropped {
		res, err = droppedObjects(ctx, cfg, c)
	} else {
		res, err = crds.ValidateExisting(ctx, cfg, c.crd)
	}
	if err != nil {
		out.Error = "checking existing objects: " + safeMessage(err)
		return out
	}
	out.Installed, out.Objects = res.Installed, res.Objects
	for _, o := range res.Invalid {
		out.InvalidObjects = append(out.InvalidObjects, api.InvalidObject{Namespace: o.Namespace, Name: o.Name, Version: o.Version, Errors: o.Errors})
	}
	return out
}

// safeMessage is an error's text for a response: the cluster packages never put credentials in
// their errors (tested), and this cuts what a remote server said to a bounded length.
func safeMessage(err error) string {
	msg := err.Error()
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}

// compareWithBase fills the report's from and its schema changes: the candidate compared with
// its base revision (none for a CRD's first revision, nor for a version that drops the CRD).
func (s *Server) compareWithBase(ctx context.Context, c *candidate, report *api.ValidationReport) error {
	if c.base == nil {
		return nil
	}
	from, err := s.revisionOut(ctx, map[string]string{}, c.base)
	if err != nil {
		return err
	}
	if c.baseVersion != "" {
		from.Version = c.baseVersion // the operator version compared with, not the revision's first
	}
	report.From = &from
	if c.dropped {
		return nil
	}
	old, err := storedCRD(c.base)
	if err != nil {
		return err
	}
	cmp, err := crds.Compare(old, c.crd)
	if err != nil {
		return err
	}
	for _, ch := range cmp.Changes {
		report.Changes = append(report.Changes, api.SchemaChange{Path: ch.Path, Kind: ch.Kind, Version: ch.Version,
			Breaking: ch.Breaking, Message: ch.Message})
	}
	report.Breaking = cmp.Breaking()
	return nil
}

// droppedObjects lists what a cluster stores of a CRD the candidate version drops.
func droppedObjects(ctx context.Context, cfg *rest.Config, c *candidate) (*crds.Existing, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return crds.StoredObjects(ctx, dyn, c.name, fmt.Sprintf("version %s of %s does not ship CRD %s: no controller reconciles this object, "+
		"and a CRD Helm installed from the chart's templates is deleted on upgrade with all its objects", c.label, c.opName, c.name))
}
