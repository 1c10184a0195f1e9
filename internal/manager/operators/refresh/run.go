package refresh

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Options adjust an on-demand refresh or change.
type Options struct {
	// Wait is how long to wait while another request or replica refreshes the operator
	// (DefaultWait when zero); then the refresh is refused with store.ErrConflict.
	Wait time.Duration
	// Extra runs in the refresh's transaction after the versions are stored (migration notes).
	Extra func(ctx context.Context, tx store.Tx) error
}

// Change is a new chart source and version filter for an operator (PATCH).
type Change struct {
	Ref    operators.ChartRef
	Filter string
}

// target is what a refresh reads: a chart source and the filter applied to it.
type target struct {
	ref    operators.ChartRef
	filter string
	// change: the operator moves to this source (PATCH): the source is validated as at
	// registration, every failure is the request's error, and the operator is updated.
	change bool
	// full: read the source whole (no conditional request), so that the transaction runs
	// whatever the source says (an on-demand refresh with migration notes).
	full bool
}

// same compares the sources, not their credentials (a change of credentials alone is not a
// change of source).
func (t target) same(o target) bool {
	return t.ref.Repository == o.ref.Repository && t.ref.Name == o.ref.Name && t.filter == o.filter
}

// targetWithAuth is targetOf(op) with op's credentials.
func (r *Refresher) targetWithAuth(ctx context.Context, op *store.Operator) (target, error) {
	t := targetOf(op)
	if r.cfg.Credentials == nil {
		return t, nil
	}
	var err error
	t.ref.Auth, err = r.cfg.Credentials(ctx, op)
	return t, err
}

func targetOf(op *store.Operator) target {
	return target{ref: operators.ChartRef{Repository: op.ChartRepository, Name: op.ChartName}, filter: op.VersionFilter}
}

// sourceKey names a chart source in the refresh record: its validators belong to it.
func sourceKey(ref operators.ChartRef) string { return ref.Repository + " " + ref.Name }

// errDeleted: the operator was deleted while it was being refreshed.
var errDeleted = fmt.Errorf("it was deleted during the refresh: %w", store.ErrConflict)

// Refresh re-reads op's chart source now and stores what changed. Another refresh of op in
// flight (here or on another replica) is waited for up to opts.Wait; then the answer is an error
// that is store.ErrConflict. A source that cannot be read is *invalid.Error, as at registration.
func (r *Refresher) Refresh(ctx context.Context, op *store.Operator, opts Options) (*api.OperatorRefreshResult, error) {
	if op.DeletedAt != nil {
		return nil, fmt.Errorf("operator %q was deleted: %w", op.Name, store.ErrConflict)
	}
	var res *api.OperatorRefreshResult
	err := r.withLease(ctx, op, waitOf(opts), func(ctx context.Context) error {
		t, err := r.targetWithAuth(ctx, op)
		if err != nil {
			return err
		}
		t.full = opts.Extra != nil
		res, _, err = r.run(ctx, op, t, opts.Extra, false)
		return err
	})
	return res, err
}

// Change moves op to another chart source or version filter: the new source is read (and every
// new version's chart fetched) before anything is stored, and a source that cannot be read, a
// chart without a version, a filter that keeps none or a version whose chart does not load is
// *invalid.Error naming the field, as at registration. On success the operator, its versions and
// their CRDs change in one transaction.
func (r *Refresher) Change(ctx context.Context, op *store.Operator, ch Change, opts Options) (*api.OperatorRefreshResult, *store.Operator, error) {
	if err := operators.ValidateRef(ch.Ref); err != nil {
		return nil, nil, err
	}
	if _, err := operators.ParseFilter(ch.Filter); err != nil {
		return nil, nil, err
	}
	if op.DeletedAt != nil {
		return nil, nil, fmt.Errorf("operator %q was deleted: %w", op.Name, store.ErrConflict)
	}
	var res *api.OperatorRefreshResult
	var updated *store.Operator
	err := r.withLease(ctx, op, waitOf(opts), func(ctx context.Context) error {
		var err error
		res, updated, err = r.run(ctx, op, target{ref: ch.Ref, filter: ch.Filter, change: true}, opts.Extra, false)
		return err
	})
	return res, updated, err
}

func waitOf(opts Options) time.Duration {
	if opts.Wait <= 0 {
		return DefaultWait
	}
	return opts.Wait
}

// refreshDue refreshes op for the loop, when this replica gets its lease and it is still due
// (another replica may have refreshed it since the list was read); it reports whether it did.
func (r *Refresher) refreshDue(ctx context.Context, op *store.Operator) bool {
	did := false
	err := r.withLease(ctx, op, 0, func(ctx context.Context) error {
		if rec, err := r.cfg.Store.OperatorRefreshGet(ctx, op.ID); err == nil && rec.NextAt.After(r.now()) {
			return nil
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		// Read the operator again under the lease: a change (PATCH) may have moved it since.
		cur, err := r.cfg.Store.OperatorGetByID(ctx, op.ID)
		if err != nil || cur.DeletedAt != nil {
			return err
		}
		did = true
		t, err := r.targetWithAuth(ctx, cur)
		if err != nil {
			return err
		}
		_, _, err = r.run(ctx, cur, t, nil, true)
		return err
	})
	switch {
	case err == nil, errors.Is(err, errBusy), errors.Is(err, errDeleted), errors.Is(err, errStale), ctx.Err() != nil:
	default:
		r.log.WarnContext(ctx, "refresh: Refreshing the operator failed", "operatorName", op.Name, "err", err)
	}
	return did
}

// run is one refresh of op from t, under op's lease. With audit (the loop's refreshes; the API
// audits its own requests) what it stores is audited in the same transaction.
func (r *Refresher) run(ctx context.Context, op *store.Operator, t target, extra func(context.Context, store.Tx) error, audit bool) (*api.OperatorRefreshResult, *store.Operator, error) {
	now := r.now()
	prev, err := r.cfg.Store.OperatorRefreshGet(ctx, op.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	stored, err := r.cfg.Store.OperatorVersionList(ctx, op.ID)
	if err != nil {
		return nil, nil, err
	}
	polled, err := r.cfg.Charts.Poll(ctx, t.ref, pollState(prev, stored, t))
	if err != nil && !t.change && isGone(err) {
		// The source no longer has the chart: every version is gone.
		polled, err = &operators.Polled{}, nil
	}
	res := &api.OperatorRefreshResult{Operator: op.Name, CheckedAt: now, Added: []string{}, Removed: []string{}, Restored: []string{},
		Changed: []string{}, Failed: []api.RefreshFailure{}}
	if err != nil {
		if !t.change {
			r.record(ctx, op, t, prev, now, err)
		}
		return nil, nil, err
	}
	if polled.NotModified {
		res.NotModified, res.Versions = true, available(stored)
		_, err := r.cfg.Store.OperatorRefreshRecord(ctx, r.recordParams(op, t, polled.Validators, now, nil))
		return res, op, err
	}
	p, err := planFor(t, stored, polled)
	if err != nil {
		return nil, nil, err
	}
	found, err := r.inspect(ctx, t, p, res)
	if err != nil {
		return nil, nil, err
	}
	validators := polled.Validators
	if len(res.Failed) > 0 {
		// Read the whole index again next time, so the versions that failed are tried again.
		validators = validatorsOf(prev)
	}
	p.fill(res)
	if audit && storedAny(res) {
		extra = r.auditIn(op, res, extra)
	}
	updated, err := r.apply(ctx, op, t, p, found, validators, now, extra)
	if err != nil {
		return nil, nil, err
	}
	if res.Versions, err = r.availableNow(ctx, op.ID); err != nil {
		return nil, nil, err
	}
	if storedAny(res) || len(res.Failed) > 0 {
		r.log.InfoContext(ctx, "refresh: Refreshed the operator's chart versions", "operatorName", op.Name,
			"added", res.Added, "removed", res.Removed, "restored", res.Restored, "changed", res.Changed, "failed", len(res.Failed))
	}
	return res, updated, nil
}

// isGone reports whether a source's error says the chart is not there (every version gone),
// rather than that the source could not be read.
func isGone(err error) bool {
	e, ok := invalid.As(err)
	return ok && e.Field == "chart.name" && e.Reason == "notFound"
}

// pollState is what the poll of t may assume: the validators of the last read of the same
// source (none when the operator moves: the new source is read whole) and the stored versions.
func pollState(prev *store.OperatorRefresh, stored []*store.OperatorVersion, t target) operators.PollState {
	st := operators.PollState{Known: map[string]operators.Version{}}
	if !t.change && !t.full && prev != nil && prev.Source == sourceKey(t.ref) {
		st.Validators = validatorsOf(prev)
	}
	if !t.change {
		for _, v := range stored {
			st.Known[v.Version] = operators.Version{Version: v.Version, AppVersion: v.AppVersion, Digest: v.Digest}
		}
	}
	return st
}

func validatorsOf(prev *store.OperatorRefresh) operators.Validators {
	if prev == nil {
		return operators.Validators{}
	}
	return operators.Validators{ETag: prev.ETag, LastModified: prev.LastModified}
}

// available lists the versions not marked removed, in the store's order (newest first).
func available(vs []*store.OperatorVersion) []string {
	out := []string{}
	for _, v := range vs {
		if v.RemovedAt == nil {
			out = append(out, v.Version)
		}
	}
	return out
}

func (r *Refresher) availableNow(ctx context.Context, operatorID string) ([]string, error) {
	vs, err := r.cfg.Store.OperatorVersionList(ctx, operatorID)
	if err != nil {
		return nil, err
	}
	return available(vs), nil
}

// storedAny reports whether the refresh stored anything.
func storedAny(res *api.OperatorRefreshResult) bool {
	return len(res.Added)+len(res.Removed)+len(res.Restored)+len(res.Changed) > 0
}
