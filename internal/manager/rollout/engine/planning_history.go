package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"k8s.io/client-go/dynamic"

	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/words"
)

// shippedCRDs is what an operator version ships: the digest of each CRD's revision, by name.
// It reads the schema history by version (crds.History) when the version's list is recorded
// whole, and the version's chart otherwise (versions registered before migration 00006).
func (e *Engine) shippedCRDs(ctx context.Context, op *store.Operator, version string) (map[string]string, error) {
	h, err := crds.LoadHistory(ctx, e.cfg.Store, op.ID, "")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if names, ok := h.Names(version); ok {
		for _, n := range names {
			out[n] = h.At(version, n).Row.Digest
		}
		return out, nil
	}
	ch, err := e.chartOf(ctx, op, version)
	if err != nil {
		return nil, err
	}
	for _, def := range ch.defs {
		d, err := crds.Digest(def)
		if err != nil {
			return nil, err
		}
		out[def.Name] = d
	}
	return out, nil
}

// droppedOn finds the CRDs the installed version ships and the new chart does not, and of those
// the ones cluster stores objects of: dropping those is breaking (package crds, StoredObjects),
// each a crdChange to crds.DroppedDigest; each is also an event crd.dropped. A dropped CRD
// without objects is no change to approve. When what the installed version ships cannot be
// read, nothing is reported (as for changeOf's digest). A cluster that cannot be read is an
// error: planning names it among the clusters not ready.
func (e *Engine) droppedOn(ctx context.Context, d *store.Deployment, op *store.Operator, ch *fetched, cluster, installed string) (map[string]crdChange, error) {
	if installed == "" || installed == d.Version {
		return nil, nil
	}
	was, err := e.shippedCRDs(ctx, op, installed)
	if err != nil {
		e.log.WarnContext(ctx, "engine: What the installed version ships could not be read: no CRD it drops is checked",
			"installedVersion", installed, telemetry.KeyCluster, cluster, "error", err)
		return nil, nil
	}
	var gone []string
	for n := range was {
		if !slices.Contains(ch.crds, n) {
			gone = append(gone, n)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	sort.Strings(gone)
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %v", cluster, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %v", cluster, err)
	}
	out := map[string]crdChange{}
	for _, n := range gone {
		res, err := crds.StoredObjects(ctx, dyn, n, "")
		if err != nil {
			return nil, fmt.Errorf("cluster %s: reading CRD %s: %v", cluster, n, err)
		}
		if res.Objects == 0 {
			continue
		}
		out[n] = crdChange{Cluster: cluster, From: was[n], To: crds.DroppedDigest}
		e.event(ctx, d.ID, "crd.dropped", cluster, fmt.Sprintf("CRD %s: %s %s no longer ships it (%s did) and cluster %s stores %s of it",
			n, op.Name, d.Version, installed, cluster, words.Count(res.Objects, "object")), map[string]any{"crd": n, "objects": res.Objects})
	}
	return out, nil
}

// recordMigrationNotes stores the migration notes the deployment's approvals and their mail
// show: for each CRD the new version ships, on each target running another version that ships
// it too, the notes of the revisions on the way (for an upgrade every version above the
// installed one up to the new one; otherwise the new version's revision), each revision once.
// Planning writes them before it asks for approvals; writing them again replaces them, so a
// replica that plans the deployment again after another died writes the same.
func (e *Engine) recordMigrationNotes(ctx context.Context, d *store.Deployment, op *store.Operator, ch *fetched, targets []approvals.Target) error {
	h, err := crds.LoadHistory(ctx, e.cfg.Store, op.ID, "")
	if err != nil {
		return err
	}
	names := slices.Sorted(slices.Values(ch.crds))
	var notes []*store.DeploymentMigrationNote
	seen := map[int64]bool{}
	for _, name := range names {
		for _, t := range targets {
			from := h.At(t.Installed, name)
			if t.Installed == "" || t.Installed == d.Version || from.Row == nil {
				continue
			}
			path := h.Between(name, t.Installed, d.Version)
			if len(path) == 0 {
				path = []crds.Shipped{h.At(d.Version, name)}
			}
			for _, s := range path {
				if s.Row == nil || !s.Row.HasNote || s.Row.SchemaID == from.Row.SchemaID || seen[s.Row.SchemaID] {
					continue
				}
				seen[s.Row.SchemaID] = true
				rev, err := e.cfg.Store.CRDSchemaGetByID(ctx, s.Row.SchemaID)
				if err != nil {
					return err
				}
				notes = append(notes, &store.DeploymentMigrationNote{CRDName: name, Version: s.Version, Digest: rev.Digest, Note: rev.Note})
			}
		}
	}
	_, err = e.cfg.Store.DeploymentMigrationNotesSet(ctx, d.ID, notes)
	return err
}
