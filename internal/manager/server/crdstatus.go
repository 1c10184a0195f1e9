package server

import (
	"context"
	"errors"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// crdStatusTimeout bounds reading a CRD from one cluster: a cluster that does not answer in time
// is an error entry, and the others still answer.
const crdStatusTimeout = 10 * time.Second

// specRevision is a stored revision as a cluster would hold it (crds.SpecDigest).
type specRevision struct {
	spec string
	rev  *store.CRDSchema
}

// crdClusters reads CRD out.Name from every registered cluster (at most ClusterConcurrency at a
// time, each within crdStatusTimeout) and says which stored revision each runs and whether that
// is the revision the operator version the manager last deployed there ships. A cluster that
// cannot be read is an entry with its error. The reads are one audit record (crd.status).
func (s *Server) crdClusters(ctx context.Context, out *api.CRD) ([]api.CRDClusterStatus, error) {
	targets, err := s.targetClusters(ctx, nil)
	if err != nil {
		return nil, err
	}
	revs, err := s.revisions(ctx, out.Name)
	if err != nil {
		return nil, err
	}
	specs := make([]specRevision, 0, len(revs))
	for _, rev := range revs {
		def, err := storedCRD(rev)
		if err != nil {
			return nil, err
		}
		d, err := crds.SpecDigest(def)
		if err != nil {
			return nil, err
		}
		specs = append(specs, specRevision{spec: d, rev: rev})
	}
	deployed, err := s.deployedCRD(ctx, out.Name)
	if err != nil {
		return nil, err
	}
	ops := map[string]string{}
	for _, rev := range revs {
		if _, err := s.revisionOut(ctx, ops, rev); err != nil { // fills ops before the goroutines read it
			return nil, err
		}
	}
	statuses := make([]api.CRDClusterStatus, len(targets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.ClusterConcurrency)
	for i, cl := range targets {
		g.Go(func() error {
			statuses[i] = s.crdStatusOn(gctx, cl, out.Name, specs, deployed[cl.Name], ops)
			return nil
		})
	}
	_ = g.Wait()
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	s.audit.Record(ctx, audit.Entry{Action: "crd.status", TargetKind: "crd", TargetName: out.Name, Result: audit.Success,
		Details: map[string]any{"clusters": names}})
	return statuses, nil
}

// crdStatusOn reads the CRD from one cluster.
func (s *Server) crdStatusOn(ctx context.Context, cl *store.Cluster, name string, specs []specRevision, dep *api.DeployedCRD, ops map[string]string) api.CRDClusterStatus {
	out := api.CRDClusterStatus{Cluster: cl.Name, Environment: string(cl.Environment), Deployed: dep}
	ctx, cancel := context.WithTimeout(ctx, crdStatusTimeout)
	defer cancel()
	cfg, err := s.clusters.RESTConfig(ctx, cl.Name)
	if err != nil {
		out.Error = "connecting: " + safeMessage(err)
		return out
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		out.Error = "connecting: " + safeMessage(err)
		return out
	}
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		out.MatchesDeployed = dep != nil && dep.Digest == crds.DroppedDigest
		return out
	}
	if err != nil {
		out.Error = "reading the CRD: " + safeMessage(err)
		return out
	}
	inst, err := crds.Describe(crd)
	if err != nil {
		out.Error = "reading the CRD: " + safeMessage(err)
		return out
	}
	out.Installed = true
	out.ServedVersions, out.StorageVersion, out.StoredVersions = inst.ServedVersions, inst.StorageVersion, inst.StoredVersions
	if rev := matchingRevision(specs, inst.SpecDigest, dep); rev != nil {
		r := api.CRDRevision{Version: rev.Version, Digest: rev.Digest, CreatedAt: rev.CreatedAt, Operator: ops[rev.OperatorID]}
		out.Revision = &r
		out.MatchesDeployed = dep != nil && dep.Digest == rev.Digest
	}
	return out
}

// matchingRevision is the stored revision whose spec is the cluster's: the deployed one when it
// is among several alike (revisions can differ in metadata only), else the newest.
func matchingRevision(specs []specRevision, spec string, dep *api.DeployedCRD) *store.CRDSchema {
	var found *store.CRDSchema
	for _, sr := range specs {
		if sr.spec != spec {
			continue
		}
		if dep != nil && sr.rev.Digest == dep.Digest {
			return sr.rev
		}
		found = sr.rev
	}
	return found
}

// deployedCRD is, by cluster, what the manager last deployed there of the operators that ship
// CRD name (their live releases): the version, and the digest of the revision it ships
// (crds.DroppedDigest when it ships none). With several such operators on one cluster, the
// first by name.
func (s *Server) deployedCRD(ctx context.Context, name string) (map[string]*api.DeployedCRD, error) {
	hists, err := s.crdHistories(ctx, name)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(hists))
	for id := range hists {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var opNames []string
	byName := map[string]*crds.History{}
	for _, id := range ids {
		op, err := s.store.OperatorGetByID(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		opNames = append(opNames, op.Name)
		byName[op.Name] = hists[id]
	}
	sort.Strings(opNames)
	out := map[string]*api.DeployedCRD{}
	for _, opName := range opNames {
		live, err := s.store.LiveReleaseList(ctx, &store.LiveReleaseListParams{OperatorName: opName})
		if err != nil {
			return nil, err
		}
		for _, r := range live {
			if out[r.ClusterName] != nil {
				continue
			}
			sh := byName[opName].At(r.Version, name)
			d := &api.DeployedCRD{Operator: opName, Version: r.Version, DeploymentID: r.DeploymentID}
			switch {
			case sh.Row != nil:
				d.Digest = sh.Row.Digest
			case sh.Dropped:
				d.Digest = crds.DroppedDigest
			default:
				continue // this version ships no such CRD: it deployed nothing of it
			}
			out[r.ClusterName] = d
		}
	}
	return out, nil
}
