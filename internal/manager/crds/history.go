package crds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// DroppedDigest stands for "no definition" where a digest is expected: the "to" of a change by
// which an operator version drops a CRD an earlier version shipped, as validate reports it and
// POST /api/v1/crds/{name}/approve records it.
const DroppedDigest = "dropped"

// InsertRevision stores one revision of crd (from operatorID's chart version, or posted to /crds
// when operatorID is ""), keyed by the digest of its Encode form. A revision with the same
// source and digest already stored is store.ErrAlreadyExists.
func InsertRevision(ctx context.Context, exec store.Executor, crd *apiextensionsv1.CustomResourceDefinition, operatorID, version string, note store.MigrationNote, now time.Time) (*store.CRDSchema, error) {
	def, digest, err := Encode(crd)
	if err != nil {
		return nil, err
	}
	return exec.CRDSchemaInsert(ctx, &store.CRDSchemaInsertParams{
		Name: crd.Name, Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Scope: string(crd.Spec.Scope),
		OperatorID: operatorID, Version: version, Digest: digest, Definition: def, Note: note, Now: now.UTC(),
	})
}

// VersionRecord is one operator version and every CRD its chart ships.
type VersionRecord struct {
	OperatorID string
	Version    string
	CRDs       []*apiextensionsv1.CustomResourceDefinition
	Now        time.Time
}

// RecordVersion stores the CRDs one operator version ships in the schema history: each CRD's
// revision (a definition already stored for the operator is reused: revisions stay
// de-duplicated by digest) and which revision the version ships of each, replacing an earlier
// record of the version. Registration and refresh call it for every new version, oldest first,
// in the transaction that upserts the version (store.Executor.OperatorVersionUpsert) first.
func RecordVersion(ctx context.Context, exec store.Executor, r *VersionRecord) error {
	revs := make(map[string]int64, len(r.CRDs))
	for _, crd := range r.CRDs {
		rev, err := InsertRevision(ctx, exec, crd, r.OperatorID, r.Version, store.MigrationNote{}, r.Now)
		if errors.Is(err, store.ErrAlreadyExists) {
			_, digest, derr := Encode(crd)
			if derr != nil {
				return derr
			}
			rev, err = exec.CRDSchemaGetByDigest(ctx, &store.CRDSchemaGetByDigestParams{Name: crd.Name, OperatorID: r.OperatorID, Digest: digest})
		}
		if err != nil {
			return fmt.Errorf("storing CRD %s of version %s: %w", crd.Name, r.Version, err)
		}
		revs[crd.Name] = rev.ID
	}
	_, err := exec.CRDVersionSet(ctx, &store.CRDVersionSetParams{OperatorID: r.OperatorID, Version: r.Version, Revisions: revs, Now: r.Now})
	return err
}

// History is which revision of each CRD every version of one operator ships, read from the
// store (LoadHistory). Versions registered before the history was kept by version (migration
// 00006) have no complete record: for those, what a CRD without a row of the version's own is
// gets inferred as the old history did (the newest revision at or below the version), and they
// never report a CRD as dropped.
type History struct {
	versions []string // newest semver first, as the store orders them
	index    map[string]int
	recorded map[string]bool
	rows     map[string]map[string]*store.CRDShipped // version → CRD name → row
}

// LoadHistory reads an operator's history, of one CRD (crdName) or of all ("").
func LoadHistory(ctx context.Context, exec store.Executor, operatorID, crdName string) (*History, error) {
	versions, err := exec.OperatorVersionList(ctx, operatorID)
	if err != nil {
		return nil, err
	}
	recorded, err := exec.CRDVersionRecordList(ctx, operatorID)
	if err != nil {
		return nil, err
	}
	rows, err := exec.CRDVersionList(ctx, &store.CRDVersionListParams{OperatorID: operatorID, CRDName: crdName})
	if err != nil {
		return nil, err
	}
	return NewHistory(versions, recorded, rows), nil
}

// NewHistory builds a History from an operator's versions (newest first), the versions whose
// record is complete, and its rows.
func NewHistory(versions []*store.OperatorVersion, recorded []string, rows []*store.CRDShipped) *History {
	h := &History{index: map[string]int{}, recorded: map[string]bool{}, rows: map[string]map[string]*store.CRDShipped{}}
	for i, v := range versions {
		h.versions = append(h.versions, v.Version)
		h.index[v.Version] = i
	}
	for _, v := range recorded {
		h.recorded[v] = true
	}
	for _, r := range rows {
		if h.rows[r.Version] == nil {
			h.rows[r.Version] = map[string]*store.CRDShipped{}
		}
		h.rows[r.Version][r.CRDName] = r
	}
	return h
}

// Versions are the operator's versions, newest first.
func (h *History) Versions() []string { return h.versions }

// Has reports whether v is one of the operator's versions.
func (h *History) Has(v string) bool { _, ok := h.index[v]; return ok }

// Recorded reports whether v's list of CRDs is complete (recorded from migration 00006 on).
func (h *History) Recorded(v string) bool { return h.recorded[v] }

// Previous is the version just below v ("" when v is the oldest or unknown).
func (h *History) Previous(v string) string {
	i, ok := h.index[v]
	if !ok || i+1 >= len(h.versions) {
		return ""
	}
	return h.versions[i+1]
}

// Shipped is what one operator version ships of one CRD.
type Shipped struct {
	Version string
	// Row is the revision the version ships; nil when it ships none.
	Row *store.CRDShipped
	// Dropped: the version ships no revision of the CRD while a version below it did.
	Dropped bool
	// Inferred: the version has no complete record and no row of its own for the CRD; Row is
	// the newest revision at or below it (how the history before migration 00006 read).
	Inferred bool
}

// At is what version v ships of CRD name (the zero Shipped, with Version set, for an unknown v).
func (h *History) At(v, name string) Shipped {
	out := Shipped{Version: v}
	i, ok := h.index[v]
	if !ok {
		return out
	}
	if r := h.rows[v][name]; r != nil {
		out.Row = r
		return out
	}
	for _, older := range h.versions[i+1:] {
		r := h.rows[older][name]
		if r == nil {
			continue
		}
		if h.recorded[v] {
			out.Dropped = true
		} else {
			out.Row, out.Inferred = r, true
		}
		return out
	}
	return out
}

// Names are the CRDs a recorded version ships, sorted; ok is false when v has no complete
// record (then only its chart can tell).
func (h *History) Names(v string) (names []string, ok bool) {
	if !h.recorded[v] {
		return nil, false
	}
	for n := range h.rows[v] {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, true
}

// Between is what each version above from up to and including to ships of CRD name, oldest
// first: the path of an upgrade. Empty when from or to is unknown or from is not below to.
func (h *History) Between(name, from, to string) []Shipped {
	i, okFrom := h.index[from]
	j, okTo := h.index[to]
	if !okFrom || !okTo || j >= i {
		return nil
	}
	out := make([]Shipped, 0, i-j)
	for k := i - 1; k >= j; k-- {
		out = append(out, h.At(h.versions[k], name))
	}
	return out
}
