package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// plan is what a refresh changes: the versions to fetch (new, or whose chart changed behind
// them), those listed again, and those to mark removed.
type plan struct {
	fetch                    []operators.Version // newest first
	added, changed, restored []string
	removed                  []removal // to mark (newly, or for another reason)
	newlyRemoved             []string
}

type removal struct{ version, reason string }

// planFor compares the stored versions with a poll of t. Moving to a new source (t.change), a
// chart without a version or a filter that keeps none is the request's error, as at registration.
func planFor(t target, stored []*store.OperatorVersion, polled *operators.Polled) (*plan, error) {
	selected, err := operators.FilterVersions(polled.Versions, t.filter)
	if err != nil {
		return nil, err
	}
	if t.change && len(polled.Versions) == 0 {
		return nil, invalid.Reasoned("chart.name", "noVersions", nil, "chart %q in %s has no semver version", t.ref.Name, t.ref.Repository)
	}
	if t.change && len(selected) == 0 {
		return nil, invalid.Reasoned("versions", "noMatch", nil, "no version of chart %q matches %q (newest is %s)", t.ref.Name, t.filter, polled.Versions[0].Version)
	}
	byVersion := make(map[string]*store.OperatorVersion, len(stored))
	for _, s := range stored {
		byVersion[s.Version] = s
	}
	p := &plan{}
	keep := map[string]bool{}
	for _, v := range selected {
		keep[v.Version] = true
		s := byVersion[v.Version]
		switch {
		case s == nil:
			p.fetch, p.added = append(p.fetch, v), append(p.added, v.Version)
		case chartChanged(s, v, t.change):
			p.fetch, p.changed = append(p.fetch, v), append(p.changed, v.Version)
			if s.RemovedAt != nil {
				p.restored = append(p.restored, v.Version)
			}
		case s.RemovedAt != nil:
			p.restored = append(p.restored, v.Version)
		}
	}
	listed := map[string]bool{}
	for _, v := range polled.Versions {
		listed[v.Version] = true
	}
	for _, s := range stored {
		if keep[s.Version] {
			continue
		}
		reason := store.VersionRemovedFromSource
		if listed[s.Version] {
			reason = store.VersionRemovedByFilter
		}
		if s.RemovedAt == nil {
			p.newlyRemoved = append(p.newlyRemoved, s.Version)
		}
		if s.RemovedAt == nil || s.RemovedReason != reason {
			p.removed = append(p.removed, removal{s.Version, reason})
		}
	}
	return p, nil
}

// chartChanged reports whether the chart behind a stored version is another one now: their
// digests differ, or, moving to another source, there is no digest to compare.
func chartChanged(s *store.OperatorVersion, v operators.Version, moving bool) bool {
	if s.Digest != "" && v.Digest != "" {
		return s.Digest != v.Digest
	}
	return moving
}

// drop leaves version out of what the plan stores (its chart could not be read).
func (p *plan) drop(version string) {
	not := func(v string) bool { return v == version }
	p.added = slices.DeleteFunc(p.added, not)
	p.changed = slices.DeleteFunc(p.changed, not)
	p.restored = slices.DeleteFunc(p.restored, not)
}

func (p *plan) fill(res *api.OperatorRefreshResult) {
	res.Added = append(res.Added, p.added...)
	res.Changed = append(res.Changed, p.changed...)
	res.Restored = append(res.Restored, p.restored...)
	res.Removed = append(res.Removed, p.newlyRemoved...)
}

// inspectConcurrency bounds the charts one refresh fetches at once (as registration does).
const inspectConcurrency = 4

// inspect fetches the plan's charts and extracts their CRDs. Moving to a new source, any failure
// is the request's error; otherwise a version that cannot be read is reported in res.Failed and
// left out of the plan.
func (r *Refresher) inspect(ctx context.Context, t target, p *plan, res *api.OperatorRefreshResult) ([]operators.VersionCRDs, error) {
	out := make([]operators.VersionCRDs, len(p.fetch))
	errs := make([]error, len(p.fetch))
	sem := make(chan struct{}, inspectConcurrency)
	var wg sync.WaitGroup
	for i, v := range p.fetch {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = r.cfg.Charts.InspectVersion(ctx, t.ref, v)
		})
	}
	wg.Wait()
	found := make([]operators.VersionCRDs, 0, len(out))
	for i, err := range errs {
		if err == nil {
			found = append(found, out[i])
			continue
		}
		e, ok := invalid.As(err)
		if t.change || !ok || ctx.Err() != nil {
			return nil, err
		}
		res.Failed = append(res.Failed, api.RefreshFailure{Version: p.fetch[i].Version, Message: e.Error()})
		p.drop(p.fetch[i].Version)
		r.log.WarnContext(ctx, "refresh: A chart version could not be read; it is tried again at the next refresh",
			"operatorName", res.Operator, "version", p.fetch[i].Version, "err", err)
	}
	return found, nil
}

// errStale: the operator's source changed since the refresh read it; nothing was stored.
var errStale = errors.New("the operator's chart source changed during the refresh")

// apply stores the plan in one transaction: the operator's new source (t.change), the new and
// changed versions with their CRDs (Config.StoreVersions), the marks, extra, and the refresh record.
func (r *Refresher) apply(ctx context.Context, op *store.Operator, t target, p *plan, found []operators.VersionCRDs,
	v operators.Validators, now time.Time, extra func(context.Context, store.Tx) error) (*store.Operator, error) {
	return store.WithTxV(ctx, r.cfg.Store, func(ctx context.Context, tx store.Tx) (*store.Operator, error) {
		cur, err := tx.OperatorGetByID(ctx, op.ID)
		switch {
		case err != nil:
			return nil, err
		case cur.DeletedAt != nil:
			return nil, fmt.Errorf("operator %q: %w", op.Name, errDeleted)
		case !t.change && !targetOf(cur).same(t):
			return nil, fmt.Errorf("operator %q: %w", op.Name, errStale)
		case t.change:
			cur, err = tx.OperatorUpdate(ctx, &store.OperatorUpdateParams{ID: op.ID, ChartRepository: t.ref.Repository,
				ChartName: t.ref.Name, VersionFilter: t.filter, Now: now})
			if err != nil {
				return nil, err
			}
		}
		if len(found) > 0 {
			if err := r.cfg.StoreVersions(ctx, tx, op.ID, found, now); err != nil {
				return nil, err
			}
		}
		if err := markVersions(ctx, tx, op.ID, p, now); err != nil {
			return nil, err
		}
		if extra != nil {
			if err := extra(ctx, tx); err != nil {
				return nil, err
			}
		}
		_, err = tx.OperatorRefreshRecord(ctx, r.recordParams(op, t, v, now, nil))
		return cur, err
	})
}

func markVersions(ctx context.Context, tx store.Tx, operatorID string, p *plan, now time.Time) error {
	for _, v := range p.restored {
		if _, err := tx.OperatorVersionSetRemoved(ctx, &store.OperatorVersionSetRemovedParams{OperatorID: operatorID, Version: v}); err != nil {
			return err
		}
	}
	for _, rm := range p.removed {
		if _, err := tx.OperatorVersionSetRemoved(ctx, &store.OperatorVersionSetRemovedParams{
			OperatorID: operatorID, Version: rm.version, RemovedAt: &now, Reason: rm.reason}); err != nil {
			return err
		}
	}
	return nil
}

// record stores a failed refresh (the source could not be read): the error, one more failure,
// and the next run an interval away; the validators stay those of the last read.
func (r *Refresher) record(ctx context.Context, op *store.Operator, t target, prev *store.OperatorRefresh, now time.Time, cause error) {
	v := operators.Validators{}
	if prev != nil && prev.Source == sourceKey(t.ref) {
		v = validatorsOf(prev)
	}
	if _, err := r.cfg.Store.OperatorRefreshRecord(ctx, r.recordParams(op, t, v, now, cause)); err != nil && ctx.Err() == nil {
		r.log.ErrorContext(ctx, "refresh: Recording a failed refresh failed", "operatorName", op.Name, "err", err)
	}
}

// RecordRegistration records op's registration, which read its source whole, as its first
// refresh in tx (the registration's transaction): the operator shows when its versions were read,
// and the loop reads them again an interval later, not at its next tick.
func (r *Refresher) RecordRegistration(ctx context.Context, tx store.Tx, op *store.Operator, ref operators.ChartRef, now time.Time) error {
	_, err := tx.OperatorRefreshRecord(ctx, r.recordParams(op, target{ref: ref}, operators.Validators{}, now, nil))
	return err
}

func (r *Refresher) recordParams(op *store.Operator, t target, v operators.Validators, now time.Time, cause error) *store.OperatorRefreshRecordParams {
	p := &store.OperatorRefreshRecordParams{OperatorID: op.ID, Source: sourceKey(t.ref), ETag: v.ETag, LastModified: v.LastModified,
		CheckedAt: now, Succeeded: cause == nil, NextAt: r.next(now)}
	if cause != nil {
		p.Error = "internal error (see the manager's log)"
		if e, ok := invalid.As(cause); ok {
			p.Error = e.Error()
		}
	}
	return p
}

// SystemActor is the audit log's actor for what the refresh loop changes on its own.
const SystemActor = "system:operator-refresh"

// auditIn is extra followed by the audit record of what a refresh of the loop changed
// (operator.refresh, as the API's refresh), in the transaction that stores it: the audit log
// has every change the loop made, never one that was not stored.
func (r *Refresher) auditIn(op *store.Operator, res *api.OperatorRefreshResult, extra func(context.Context, store.Tx) error) func(context.Context, store.Tx) error {
	return func(ctx context.Context, tx store.Tx) error {
		if extra != nil {
			if err := extra(ctx, tx); err != nil {
				return err
			}
		}
		details, err := json.Marshal(map[string]any{"added": res.Added, "removed": res.Removed, "restored": res.Restored,
			"changed": res.Changed, "failed": len(res.Failed)})
		if err != nil {
			return err
		}
		_, err = tx.AuditInsert(ctx, &store.AuditInsertParams{At: res.CheckedAt, Actor: SystemActor,
			Action: "operator.refresh", TargetKind: "operator", TargetName: op.Name, Result: "success", Details: string(details)})
		return err
	}
}
