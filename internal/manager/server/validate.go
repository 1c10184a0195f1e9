package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sync/errgroup"

	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

func (s *Server) validateCRD(w http.ResponseWriter, r *http.Request) error {
	var req ValidateRequest
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
	report := ValidationReport{CRD: name, To: CRDRevision{Version: c.label, Operator: c.opName, Digest: c.digest, CreatedAt: c.created},
		Changes: []SchemaChange{}, Clusters: make([]ClusterCheck, len(targets))}
	if c.base != nil {
		ops := map[string]string{}
		from, err := s.revisionOut(ctx, ops, c.base)
		if err != nil {
			return err
		}
		report.From = &from
		old, err := storedCRD(c.base)
		if err != nil {
			return err
		}
		cmp, err := crds.Compare(old, c.crd)
		if err != nil {
			return err
		}
		for _, ch := range cmp.Changes {
			report.Changes = append(report.Changes, SchemaChange{Path: ch.Path, Kind: ch.Kind, Version: ch.Version,
				Breaking: ch.Breaking, Message: ch.Message})
		}
		report.Breaking = cmp.Breaking()
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
func (s *Server) checkCluster(ctx context.Context, cl *store.Cluster, c *candidate) ClusterCheck {
	out := ClusterCheck{Cluster: cl.Name, Environment: string(cl.Environment), InvalidObjects: []InvalidObject{}}
	cfg, err := s.clusters.RESTConfig(ctx, cl.Name)
	if err != nil {
		out.Error = "connecting: " + safeMessage(err)
		return out
	}
	res, err := crds.ValidateExisting(ctx, cfg, c.crd)
	if err != nil {
		out.Error = "checking existing objects: " + safeMessage(err)
		return out
	}
	out.Installed, out.Objects = res.Installed, res.Objects
	for _, o := range res.Invalid {
		out.InvalidObjects = append(out.InvalidObjects, InvalidObject{Namespace: o.Namespace, Name: o.Name, Version: o.Version, Errors: o.Errors})
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
