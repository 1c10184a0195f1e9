package store

import (
	"context"
	"time"
)

// Operators that keep moving (migration 00005): their chart versions are discovered again on an
// interval and on demand, a version gone from the source is marked removed (never deleted: the
// deployments that used it keep their history), an operator's source can change, and a deleted
// operator keeps its row (DeletedAt) so its history stays readable.
//
// OperatorLifecycleExecutor is part of Executor: on the pool and in a Tx.
type OperatorLifecycleExecutor interface {
	// OperatorUpdate replaces an operator's chart source and version filter; ErrNotFound when
	// no operator has p.ID.
	OperatorUpdate(ctx context.Context, p *OperatorUpdateParams) (*Operator, error)
	// OperatorMarkDeleted marks an operator deleted at p.Now, keeping it and its history;
	// ErrNotFound when no operator has p.ID or it is deleted already.
	OperatorMarkDeleted(ctx context.Context, p *OperatorMarkDeletedParams) (*Operator, error)
	// OperatorVersionSetRemoved marks one version of an operator removed (p.RemovedAt set, with
	// p.Reason; a version removed already keeps its first RemovedAt) or available again
	// (p.RemovedAt nil); ErrNotFound when the operator has no such version.
	OperatorVersionSetRemoved(ctx context.Context, p *OperatorVersionSetRemovedParams) (*OperatorVersion, error)

	// OperatorRefreshGet returns an operator's refresh record; ErrNotFound before its first
	// refresh.
	OperatorRefreshGet(ctx context.Context, operatorID string) (*OperatorRefresh, error)
	// OperatorRefreshRecord stores the outcome of one refresh (an upsert): on success Failures
	// goes back to 0 and SucceededAt becomes p.CheckedAt; on failure Failures counts up and
	// SucceededAt stays. ErrNotFound when no operator has p.OperatorID.
	OperatorRefreshRecord(ctx context.Context, p *OperatorRefreshRecordParams) (*OperatorRefresh, error)
	// OperatorRefreshDue lists the operators (not deleted) whose refresh is due at p.Now: those
	// never refreshed first, then by NextAt, then by name; at most p.Limit (NormalizeLimit).
	OperatorRefreshDue(ctx context.Context, p *OperatorRefreshDueParams) ([]*Operator, error)
}

// Why a version is marked removed (OperatorVersion.RemovedReason).
const (
	// VersionRemovedFromSource: the chart source no longer lists the version.
	VersionRemovedFromSource = "source"
	// VersionRemovedByFilter: the source lists it, but the operator's version filter leaves it out
	// (the filter was changed).
	VersionRemovedByFilter = "filter"
)

type OperatorUpdateParams struct {
	ID              string
	ChartRepository string
	ChartName       string
	VersionFilter   string
	Now             time.Time
}

type OperatorMarkDeletedParams struct {
	ID  string
	Now time.Time
}

type OperatorVersionSetRemovedParams struct {
	OperatorID string
	Version    string
	// RemovedAt nil makes the version available again (and clears the reason).
	RemovedAt *time.Time
	Reason    string
}

// OperatorRefresh is the refresh loop's record of one operator.
type OperatorRefresh struct {
	OperatorID string
	// Source is the chart source the validators belong to ("<repository> <chart name>"): a
	// changed source is read whole again.
	Source string
	// ETag and LastModified are what the source's index.yaml answered last, sent back as
	// If-None-Match and If-Modified-Since ("" when it gave none, or for OCI sources).
	ETag         string
	LastModified string
	CheckedAt    time.Time  // the last refresh, whatever its outcome
	SucceededAt  *time.Time // the last one that succeeded
	NextAt       time.Time  // when the loop refreshes the operator next
	Error        string     // the last refresh's error ("" when it succeeded), for people
	Failures     int        // refreshes failed in a row
}

type OperatorRefreshRecordParams struct {
	OperatorID   string
	Source       string
	ETag         string
	LastModified string
	CheckedAt    time.Time
	Succeeded    bool
	NextAt       time.Time
	Error        string
}

type OperatorRefreshDueParams struct {
	Now   time.Time
	Limit int
}
