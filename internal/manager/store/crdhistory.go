package store

import (
	"context"
	"time"
)

// CRD history by version (migration 00006). A revision of a CRD (CRDSchema) is stored once per
// source and digest; which revision each operator version ships is recorded beside it, one row
// per (operator version, CRD). A version re-shipping an older definition (A → B → A) points at
// the older revision again, and a version that no longer ships a CRD has no row for it.
//
// Versions registered before migration 00006 have no record (CRDVersionRecordList): the old
// history kept a revision only when a CRD changed, so their rows are only the revisions they
// introduced (the migration maps each stored revision to the version that registered it). What
// such a version ships of a CRD without a row of its own is inferred as before: the newest
// revision at or below it (package crds, History).

// MigrationNote tells people how to move their objects to a CRD revision: markdown text, a link
// to a guide, or both. Validation (length, URL scheme) happens at the API's edge (crds.Note).
type MigrationNote struct {
	Text string
	URL  string
}

// IsZero reports whether the note says nothing.
func (n MigrationNote) IsZero() bool { return n.Text == "" && n.URL == "" }

// CRDShipped says that one operator version ships one revision of one CRD.
type CRDShipped struct {
	OperatorID string
	Version    string // the operator (chart) version
	CRDName    string
	SchemaID   int64  // the CRDSchema's ID
	Digest     string // the revision's digest
	HasNote    bool   // the revision carries a migration note
}

// CRDVersionSetParams records which revision of each CRD one operator version ships: schema ids
// by CRD name (empty: the version ships no CRD). The version must be one of the operator's.
type CRDVersionSetParams struct {
	OperatorID string
	Version    string
	Revisions  map[string]int64
	Now        time.Time
}

// CRDVersionListParams selects rows by operator (optionally one version of it), by CRD name, or
// by both; at least OperatorID or CRDName.
type CRDVersionListParams struct {
	OperatorID string
	Version    string
	CRDName    string
}

// CRDSchemaGetByDigestParams names a stored revision by its source (OperatorID, "" for one
// posted to /crds) and digest.
type CRDSchemaGetByDigestParams struct {
	Name       string
	OperatorID string
	Digest     string
}

// CRDSchemaSetNoteParams replaces a revision's migration note (a zero Note removes it).
type CRDSchemaSetNoteParams struct {
	ID   int64
	Note MigrationNote
}

// DeploymentMigrationNote is a migration note a deployment's approvals show: the note of the
// revision of CRDName that operator version Version ships (Digest), as planning found it.
type DeploymentMigrationNote struct {
	DeploymentID string
	CRDName      string
	Version      string
	Digest       string
	Note         MigrationNote
}

// CRDHistoryExecutor is the store's part for the CRD history by version and migration notes.
type CRDHistoryExecutor interface {
	// CRDSchemaGetByID returns one revision; ErrNotFound when there is none.
	CRDSchemaGetByID(ctx context.Context, id int64) (*CRDSchema, error)
	// CRDSchemaGetByDigest returns the revision of a CRD with that source and digest.
	CRDSchemaGetByDigest(ctx context.Context, p *CRDSchemaGetByDigestParams) (*CRDSchema, error)
	// CRDSchemaSetNote replaces a revision's migration note and returns the revision.
	CRDSchemaSetNote(ctx context.Context, p *CRDSchemaSetNoteParams) (*CRDSchema, error)
	// CRDVersionSet records, atomically, the complete list of revisions one operator version
	// ships, replacing any earlier record of that version, and marks the version recorded.
	// ErrNotFound: the operator version or a revision does not exist.
	CRDVersionSet(ctx context.Context, p *CRDVersionSetParams) ([]*CRDShipped, error)
	// CRDVersionList returns the rows of an operator and/or a CRD, ordered by operator,
	// version and CRD name (versions as text: order them by semver in Go).
	CRDVersionList(ctx context.Context, p *CRDVersionListParams) ([]*CRDShipped, error)
	// CRDVersionRecordList returns the versions of an operator whose list of CRDs is recorded
	// whole (CRDVersionSet), in no particular order.
	CRDVersionRecordList(ctx context.Context, operatorID string) ([]string, error)

	// DeploymentMigrationNotesSet replaces the migration notes of a deployment (planning writes
	// them with its approvals) and returns them in order.
	DeploymentMigrationNotesSet(ctx context.Context, deploymentID string, notes []*DeploymentMigrationNote) ([]*DeploymentMigrationNote, error)
	// DeploymentMigrationNotesListMany returns the notes of several deployments in the order
	// set; a deployment without notes has no entry.
	DeploymentMigrationNotesListMany(ctx context.Context, deploymentIDs []string) (map[string][]*DeploymentMigrationNote, error)
}
