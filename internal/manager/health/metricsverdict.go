package health

import (
	"context"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// The bounds of the metrics verdict (docs/manager-rollout.md, "Operator health checks").
const (
	// ErrorRateFactor: an error rate of MaxErrorRate or more is the version's only when it is
	// also more than this many times the rate before the deployment.
	ErrorRateFactor = 1.2
	// MinReconciles: a window with fewer reconciles has no error rate to judge.
	MinReconciles = 10
	// MinErrors: fewer errors in the window are not judged whatever the rate (one conflict on a
	// status update in twenty reconciles is 5 %, and no fault of the version).
	MinErrors = 5
	// MaxQueueDepth: a workqueue deeper than this, deeper than in the baseline and holding more
	// keys than were reconciled since (not draining), is Degraded.
	MaxQueueDepth = 100
	// SlowProcessor and StuckProcessor: a reconcile running longer is Degraded, Unhealthy.
	SlowProcessor  = 5 * time.Minute
	StuckProcessor = 15 * time.Minute
)

// checkMetrics reads the operator's metrics and judges them against the target's baseline.
func (c *Checker) checkMetrics(ctx context.Context, cl *clients, t Target) (api.MetricsStatus, *MetricsSnapshot) {
	st := &metricsPart{api.MetricsStatus{Health: api.HealthUnknown, Read: api.VerdictNotChecked, Messages: []string{}}}
	ep, err := findMetricsEndpoint(ctx, cl.kube, t)
	if err != nil {
		st.Messages = append(st.Messages, "metrics not read: "+err.Error()+"; judged on the other parts")
		return st.MetricsStatus, nil
	}
	st.Endpoint = ep.String()
	now, err := readMetrics(ctx, cl.kube, ep, c.cfg.Now())
	if err != nil {
		st.Messages = append(st.Messages, "metrics not read: "+err.Error()+"; judged on the other parts")
		return st.MetricsStatus, nil
	}
	st.Read, st.Health = api.VerdictPassed, api.Healthy
	var base, before *MetricsSnapshot
	if t.Baseline != nil {
		base, before, st.Before = t.Baseline.Metrics, t.Baseline.Before, t.Baseline.BeforeWindow
	}
	st.judge(now, base, before, c.cfg.MaxErrorRate)
	return st.MetricsStatus, now
}

// metricsPart is the metrics part while the checker judges it.
type metricsPart struct {
	api.MetricsStatus
}

// judge sets the part's health from the snapshot now, compared with the baseline's snapshot
// base (nil: none, the window is the process's lifetime) and the one before it; a window before
// already set (the baseline's BeforeWindow) is kept.
func (st *metricsPart) judge(now, base, before *MetricsSnapshot, maxRate float64) {
	st.WorkqueueDepth, st.LongestRunningSeconds = now.Depth, now.Longest
	st.Window = window(base, now, "baseline")
	var notes []string
	switch {
	case base == nil:
		st.Before = nil
		notes = append(notes, "no baseline snapshot: rates since the process started, not compared")
	case st.Before != nil: // given: the window before the deployment that its own checks used
	case before != nil && before.At.Before(base.At):
		st.Before = window(before, base, BaselineLastHealthy)
	}
	if base != nil && (st.Before == nil || st.Before.Reconciles < MinReconciles) {
		// No window before, or too short to hold a rate: the process's lifetime rate at capture.
		st.Before = window(nil, base, "lifetime")
	}
	// What failed comes before the notes (a summary shows the first message).
	defer func() { st.Messages = append(st.Messages, notes...) }()
	st.Panics = now.Panics
	if base != nil && !st.Window.Reset {
		st.Panics = now.Panics - base.Panics
	}
	switch {
	case st.Panics > 0 && base != nil:
		st.fail(api.Unhealthy, "%.0f reconcile panics since the baseline", st.Panics)
	case st.Panics > 0:
		st.fail(api.Degraded, "%.0f reconcile panics since the process started", st.Panics)
	}
	if note := st.judgeRate(maxRate); note != "" {
		notes = append(notes, note)
	}
	// A queue is deep in bursts (every resource requeued at once); it is not draining when it is
	// deeper than at the baseline and holds more keys than were reconciled since.
	if now.Depth > MaxQueueDepth && (base == nil || now.Depth > base.Depth) && st.Window.Reconciles < now.Depth {
		st.fail(api.Degraded, "workqueue depth %.0f (over %d), more than the %.0f reconciles since the baseline: not draining",
			now.Depth, MaxQueueDepth, st.Window.Reconciles)
	}
	switch longest := time.Duration(now.Longest * float64(time.Second)); {
	case longest > StuckProcessor:
		st.fail(api.Unhealthy, "a reconcile has been running for %s (over %s)", longest.Round(time.Second), StuckProcessor)
	case longest > SlowProcessor:
		st.fail(api.Degraded, "a reconcile has been running for %s (over %s)", longest.Round(time.Second), SlowProcessor)
	}
}

// judgeRate judges the window's error rate against maxRate and the rate before; note says why
// it was not judged.
func (st *metricsPart) judgeRate(maxRate float64) (note string) {
	w := st.Window
	switch {
	case w.Reconciles < MinReconciles:
		return fmt.Sprintf("error rate not judged: %.0f reconciles in the window (fewer than %d)", w.Reconciles, MinReconciles)
	case w.ErrorRate < maxRate:
	case w.Errors < MinErrors:
		return fmt.Sprintf("error rate %.1f %% not judged: %.0f errors in the window (fewer than %d)", 100*w.ErrorRate, w.Errors, MinErrors)
	case st.Before == nil:
		st.fail(api.Degraded, "reconcile error rate %.1f %% since the process started, no baseline to compare with", 100*w.ErrorRate)
	case w.ErrorRate > ErrorRateFactor*st.Before.ErrorRate:
		st.fail(api.Unhealthy, "reconcile error rate %.1f %% (%.0f of %.0f) since the baseline, %.1f %% before (%s)",
			100*w.ErrorRate, w.Errors, w.Reconciles, 100*st.Before.ErrorRate, st.Before.Basis)
	default:
		st.fail(api.Degraded, "reconcile error rate %.1f %% since the baseline, as before (%.1f %%, %s): not the version's",
			100*w.ErrorRate, 100*st.Before.ErrorRate, st.Before.Basis)
	}
	return ""
}

func (st *metricsPart) fail(h api.HealthState, format string, args ...any) {
	st.Health = worst(st.Health, h)
	st.Messages = append(st.Messages, fmt.Sprintf(format, args...))
}

// window is the error rate from from to to (from nil: since to's process started). Counters that
// went down, or another process start time, mean the process restarted (an upgrade's new pods):
// the window then counts from zero.
func window(from, to *MetricsSnapshot, basis string) *api.RateWindow {
	w := &api.RateWindow{To: to.At, Basis: basis, Reconciles: to.Total, Errors: to.Errors}
	if to.StartTime > 0 {
		w.From = time.Unix(int64(to.StartTime), 0).UTC()
	}
	if from == nil {
		w.Basis = "lifetime"
	} else if reset(from, to) {
		w.Reset = true
	} else {
		w.From, w.Reconciles, w.Errors = from.At, to.Total-from.Total, to.Errors-from.Errors
	}
	if w.Reconciles > 0 {
		w.ErrorRate = w.Errors / w.Reconciles
	}
	return w
}

func reset(from, to *MetricsSnapshot) bool {
	return (from.StartTime > 0 && to.StartTime > 0 && from.StartTime != to.StartTime) ||
		to.Total < from.Total || to.Errors < from.Errors || to.Panics < from.Panics
}
