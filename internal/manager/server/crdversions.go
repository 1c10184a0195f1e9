package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// maxMigrationNotes bounds the notes one request carries.
const maxMigrationNotes = 200

// parseMigrationNotes checks the migrationNotes of a registration or refresh request (field
// names the list) before anything is fetched: each names a CRD, optionally a version, and a
// note crds.CheckNote accepts. Whether the version ships the CRD is checked when the notes are
// stored (storeVersions).
func parseMigrationNotes(field string, reqs []api.MigrationNoteRequest) ([]crds.VersionNote, error) {
	if len(reqs) > maxMigrationNotes {
		return nil, invalid.Field(field, "at most %d notes, not %d", maxMigrationNotes, len(reqs))
	}
	out := make([]crds.VersionNote, 0, len(reqs))
	for i, r := range reqs {
		f := fmt.Sprintf("%s[%d]", field, i)
		if r.CRD == "" {
			return nil, invalid.Field(f+".crd", "required: the CRD's name (<plural>.<group>)")
		}
		note, err := crds.CheckNote(f, store.MigrationNote{Text: r.Text, URL: r.URL})
		if err != nil {
			return nil, err
		}
		out = append(out, crds.VersionNote{CRD: r.CRD, Version: r.Version, Note: note})
	}
	return out, nil
}

// storeVersions stores chart versions of an operator with the CRDs each ships, oldest first so
// the schema history reads in release order, then the migration notes (parseMigrationNotes)
// on the revisions they name. found is newest first, as operators.Inspection lists it. It is
// what registration and refresh share: run it in their transaction.
func storeVersions(ctx context.Context, tx store.Executor, operatorID string, found []operators.VersionCRDs, notes []crds.VersionNote, now time.Time) error {
	for i := len(found) - 1; i >= 0; i-- {
		f := found[i]
		if _, err := tx.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{
			OperatorID: operatorID, Version: f.Version.Version, AppVersion: f.Version.AppVersion, Digest: f.Version.Digest, Now: now,
		}); err != nil {
			return err
		}
		if err := crds.RecordVersion(ctx, tx, &crds.VersionRecord{OperatorID: operatorID, Version: f.Version.Version, CRDs: f.CRDs, Now: now}); err != nil {
			return err
		}
	}
	return crds.ApplyNotes(ctx, tx, operatorID, "migrationNotes", notes)
}

func noteOut(n store.MigrationNote) *api.MigrationNote {
	if n.IsZero() {
		return nil
	}
	return &api.MigrationNote{Text: n.Text, URL: n.URL}
}

// operatorCandidate is the candidate of a validate or approve request naming an operator's
// version: the revision of CRD name that version ships (or its dropping the CRD), compared with
// the revision the version just below ships, or baseVersion's. revs are the CRD's revisions.
func (s *Server) operatorCandidate(ctx context.Context, name string, revs []*store.CRDSchema, req api.ValidateRequest) (*candidate, error) {
	if req.Version == "" {
		return nil, errInvalid("version", "required with operator: the chart version whose CRD to validate")
	}
	op, err := s.store.OperatorGetByName(ctx, req.Operator)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errInvalid("operator", "no operator %q is registered", req.Operator)
	}
	if err != nil {
		return nil, err
	}
	h, err := crds.LoadHistory(ctx, s.store, op.ID, name)
	if err != nil {
		return nil, err
	}
	if !h.Has(req.Version) {
		return nil, errInvalid("version", "operator %q has no version %q", req.Operator, req.Version)
	}
	byID := make(map[int64]*store.CRDSchema, len(revs))
	for _, r := range revs {
		byID[r.ID] = r
	}
	c := &candidate{name: name, label: req.Version, opName: op.Name}
	switch to := h.At(req.Version, name); {
	case to.Row != nil:
		rev := byID[to.Row.SchemaID]
		if rev == nil {
			return nil, fmt.Errorf("CRD %s: revision %d of %s %s is not among the CRD's revisions", name, to.Row.SchemaID, op.Name, req.Version)
		}
		if c.crd, err = storedCRD(rev); err != nil {
			return nil, err
		}
		c.digest, c.created, c.toNote = rev.Digest, rev.CreatedAt, rev.Note
	case to.Dropped:
		c.digest, c.dropped = crds.DroppedDigest, true
	default:
		return nil, errInvalid("version", "version %q of operator %q does not ship CRD %q", req.Version, req.Operator, name)
	}
	c.baseVersion = req.BaseVersion
	if c.baseVersion == "" {
		c.baseVersion = h.Previous(req.Version)
	} else if !h.Has(c.baseVersion) {
		return nil, errInvalid("baseVersion", "operator %q has no version %q", req.Operator, c.baseVersion)
	}
	if c.baseVersion != "" {
		if b := h.At(c.baseVersion, name); b.Row != nil {
			c.base = byID[b.Row.SchemaID]
		} else if req.BaseVersion != "" {
			return nil, errInvalid("baseVersion", "version %q of operator %q does not ship CRD %q", req.BaseVersion, req.Operator, name)
		}
	}
	c.notes = notesOnTheWay(h, byID, name, c.baseVersion, req.Version, c.base)
	return c, nil
}

// notesOnTheWay are the migration notes of the revisions an upgrade from version from to version
// to passes (each version above from up to to, oldest first; the revision base it starts from
// excluded), or, when that is no upgrade, of the revision to ships. Each revision once.
func notesOnTheWay(h *crds.History, byID map[int64]*store.CRDSchema, name, from, to string, base *store.CRDSchema) []api.RevisionNote {
	path := h.Between(name, from, to)
	if len(path) == 0 {
		path = []crds.Shipped{h.At(to, name)}
	}
	var out []api.RevisionNote
	seen := map[int64]bool{}
	if base != nil {
		seen[base.ID] = true
	}
	for _, s := range path {
		if s.Row == nil || seen[s.Row.SchemaID] {
			continue
		}
		seen[s.Row.SchemaID] = true
		if rev := byID[s.Row.SchemaID]; rev != nil && !rev.Note.IsZero() {
			out = append(out, api.RevisionNote{CRD: name, Version: s.Version, Digest: rev.Digest, Note: *noteOut(rev.Note)})
		}
	}
	return out
}

// crdHistories reads the history of CRD name of every operator that ships it, by operator id.
func (s *Server) crdHistories(ctx context.Context, name string) (map[string]*crds.History, error) {
	rows, err := s.store.CRDVersionList(ctx, &store.CRDVersionListParams{CRDName: name})
	if err != nil {
		return nil, err
	}
	out := map[string]*crds.History{}
	for _, r := range rows {
		if out[r.OperatorID] != nil {
			continue
		}
		h, err := crds.LoadHistory(ctx, s.store, r.OperatorID, name)
		if err != nil {
			return nil, err
		}
		out[r.OperatorID] = h
	}
	return out, nil
}

// versionsByRevision lists, by revision id, the operator versions that ship it, newest first.
func versionsByRevision(hists map[string]*crds.History, name string) map[int64][]string {
	out := map[int64][]string{}
	for _, h := range hists {
		for _, v := range h.Versions() {
			if sh := h.At(v, name); sh.Row != nil {
				out[sh.Row.SchemaID] = append(out[sh.Row.SchemaID], v)
			}
		}
	}
	return out
}

// droppedIn names the versions that stopped shipping CRD name (the version below shipped it).
func (s *Server) droppedIn(ctx context.Context, ops map[string]string, hists map[string]*crds.History, name string) ([]api.OperatorVersionRef, error) {
	var out []api.OperatorVersionRef
	for opID, h := range hists {
		for _, v := range h.Versions() {
			if !h.At(v, name).Dropped || h.At(h.Previous(v), name).Row == nil {
				continue
			}
			rev, err := s.revisionOut(ctx, ops, &store.CRDSchema{OperatorID: opID})
			if err != nil {
				return nil, err
			}
			out = append(out, api.OperatorVersionRef{Operator: rev.Operator, Version: v})
		}
	}
	slices.SortFunc(out, func(a, b api.OperatorVersionRef) int {
		return cmp.Or(cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Version, b.Version))
	})
	return out, nil
}
