package health

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health/healthtest"
)

// metricsOperator starts a real controller (healthtest) over 20 Gizmos in a namespace of its own,
// with its metrics Service, and a Deployment of the release whose (kwok) pods are Ready.
func metricsOperator(t *testing.T, opts healthtest.Options) (*healthtest.Operator, Target) {
	t.Helper()
	ns := namespace(t)
	for i := range 20 {
		if err := env.Client.Create(context.Background(), gizmo(ns, fmt.Sprintf("g%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	opts.Namespace, opts.GVK = ns, gizmoGVK
	if opts.Release == "" {
		opts.Release = "gizmo"
	}
	operatorDeployment(t, ns, opts.Release, 1, nil, nil)
	op := healthtest.Start(t, env.Config, opts)
	return op, Target{OperatorName: "gizmo", Namespace: ns, Release: opts.Release, CRDs: []string{gizmoCRD}}
}

// capture captures a baseline, failing the test on an error.
func capture(t *testing.T, c *Checker, target Target) *Baseline {
	t.Helper()
	b, err := c.Capture(testCtx(t), "local", env.Config, target)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOperatorMetrics reads a real controller-runtime controller's metrics through the API server's
// Service proxy: reconciles that succeed keep it Healthy; reconciles that fail since the baseline
// make the metrics part, and with it the cluster, Unhealthy with the error rate in the message;
// an error rate as high before the deployment is Degraded only (not the version's).
func TestOperatorMetrics(t *testing.T) {
	installGizmoCRD(t)
	op, target := metricsOperator(t, healthtest.Options{})
	c := NewChecker(Config{})
	got := checkUntil(t, c, target, "the operator healthy, its metrics read", func(h Result) bool {
		return h.Health == api.Healthy && h.Metrics.Read == api.VerdictPassed && h.Metrics.Window.Reconciles >= 40
	})
	m := got.Metrics
	if m.Health != api.Healthy || m.Window.Basis != "lifetime" || !strings.HasPrefix(m.Endpoint, "http://"+target.Namespace+"/gizmo-metrics:http-metrics") ||
		got.Observed == nil || got.Observed.Metrics == nil || !hasMessage(m.Messages, "no baseline snapshot") {
		t.Fatalf("metrics of a healthy operator without baseline: %+v", m)
	}

	// The baseline while it reconciles well; then every reconcile fails.
	ok := capture(t, c, target)
	time.Sleep(time.Second)
	op.SetMode(healthtest.Error)
	target.Baseline = ok
	got = checkUntil(t, c, target, "the metrics Unhealthy", func(h Result) bool { return h.Metrics.Health == api.Unhealthy })
	m = got.Metrics
	if got.Health != api.Unhealthy || m.Window.Basis != "baseline" || m.Window.ErrorRate < DefaultMaxErrorRate || m.Before == nil ||
		m.Before.Basis != "lifetime" || m.Before.ErrorRate != 0 || !hasMessage(m.Messages, "reconcile error rate") || got.CRDs.Health != api.Healthy {
		t.Fatalf("reconciles failing since the baseline: cluster %s, metrics %+v (window %+v, before %+v)", got.Health, m, m.Window, m.Before)
	}

	// Failing as much before the deployment (the last Healthy snapshot to the baseline) as since:
	// not the version's.
	before := capture(t, c, target)
	time.Sleep(2 * time.Second)
	failing := capture(t, c, target)
	failing.Before = before.Metrics
	time.Sleep(2 * time.Second)
	target.Baseline = failing
	m = checkOnce(t, c, target).Metrics
	if m.Health != api.Degraded || m.Before == nil || m.Before.Basis != BaselineLastHealthy || m.Before.ErrorRate < 0.9 ||
		!hasMessage(m.Messages, "as before") {
		t.Fatalf("failing as much before: %+v (window %+v, before %+v), want Degraded, as before", m, m.Window, m.Before)
	}

	// Panics since the baseline are Unhealthy whatever the rates.
	op.SetMode(healthtest.Panic)
	target.Baseline = capture(t, c, target)
	m = checkUntil(t, c, target, "panics counted", func(h Result) bool { return h.Metrics.Panics > 0 }).Metrics
	if m.Health != api.Unhealthy || !hasMessage(m.Messages, "reconcile panics since the baseline") {
		t.Fatalf("panicking reconciles: %+v, want Unhealthy", m)
	}
}

// TestOperatorMetricsNotRead: an endpoint that wants the caller's token (the proxy passes none on)
// and a release without metrics Service are judged on the other parts, and the detail says so:
// never a pass.
func TestOperatorMetricsNotRead(t *testing.T) {
	installGizmoCRD(t)
	_, target := metricsOperator(t, healthtest.Options{Secure: true})
	c := NewChecker(Config{})
	got := checkUntil(t, c, target, "the pods Ready and the resources reconciled", func(h Result) bool {
		return h.Pods.Health == api.Healthy && h.CRDs.Ready == 20
	})
	m := got.Metrics
	if m.Read != api.VerdictNotChecked || m.Health != api.HealthUnknown || got.Health != api.Healthy || m.Window != nil ||
		!hasMessage(m.Messages, "metrics not read: https://"+target.Namespace+"/gizmo-metrics:https-metrics/metrics answered 401") ||
		!hasMessage(m.Messages, "judged on the other parts") {
		t.Fatalf("metrics behind authentication: cluster %s, metrics %+v", got.Health, m)
	}

	_, target = metricsOperator(t, healthtest.Options{Release: "quiet", NoService: true})
	// The CRD's resources are counted in every namespace: the first release's 20 and these.
	got = checkUntil(t, c, target, "the pods Ready", func(h Result) bool { return h.Pods.Health == api.Healthy && h.CRDs.Ready == 40 })
	if m = got.Metrics; m.Read != api.VerdictNotChecked || m.Health != api.HealthUnknown || !hasMessage(m.Messages, "metrics not read: the release has no metrics Service") {
		t.Fatalf("no metrics Service: %+v", m)
	}
}

// TestMetricsWindowReset: counters lower than the baseline's, or another process start time, are
// a new process (an upgrade's new pods): the window counts from zero instead of going negative.
func TestMetricsWindowReset(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := &MetricsSnapshot{At: at, StartTime: 100, Total: 1000, Errors: 10}
	for _, tc := range []struct {
		name  string
		now   MetricsSnapshot
		reset bool
		rate  float64
	}{
		{"same process", MetricsSnapshot{At: at.Add(time.Minute), StartTime: 100, Total: 1100, Errors: 20}, false, 0.1},
		{"restarted", MetricsSnapshot{At: at.Add(time.Minute), StartTime: 150, Total: 2000, Errors: 400}, true, 0.2},
		{"counters down", MetricsSnapshot{At: at.Add(time.Minute), Total: 50, Errors: 25}, true, 0.5},
	} {
		w := window(base, &tc.now, "baseline")
		if w.Reset != tc.reset || w.ErrorRate != tc.rate {
			t.Errorf("%s: %+v, want reset %v, rate %v", tc.name, w, tc.reset, tc.rate)
		}
	}
}

// TestMetricsVerdict: the metrics rows of the signal-to-verdict table, on snapshots (the reads
// themselves are TestOperatorMetrics').
func TestMetricsVerdict(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := func(d time.Duration, total, errors, panics, depth, longest float64) *MetricsSnapshot {
		return &MetricsSnapshot{At: at.Add(d), StartTime: 1, Total: total, Errors: errors, Panics: panics, Depth: depth, Longest: longest}
	}
	before, base := snap(-time.Minute, 0, 0, 0, 0, 0), snap(0, 1000, 10, 0, 0, 0) // 1 % before
	for _, tc := range []struct {
		name       string
		now        *MetricsSnapshot
		base, prev *MetricsSnapshot
		want       api.HealthState
		msg        string
	}{
		{"quiet", snap(time.Minute, 2000, 20, 0, 3, 0.1), base, before, api.Healthy, ""},
		{"errors up", snap(time.Minute, 2000, 110, 0, 0, 0), base, before, api.Unhealthy, "reconcile error rate 10.0 % (100 of 1000) since the baseline, 1.0 % before"},
		{"errors up, lifetime before", snap(time.Minute, 2000, 110, 0, 0, 0), base, nil, api.Unhealthy, "1.0 % before (lifetime)"},
		{"errors high before too", snap(2*time.Minute, 3000, 210, 0, 0, 0), snap(time.Minute, 2000, 110, 0, 0, 0), base, api.Degraded, "as before"},
		{"too few reconciles", snap(time.Minute, 1005, 15, 0, 0, 0), base, before, api.Healthy, "error rate not judged: 5 reconciles"},
		{"panics", snap(time.Minute, 2000, 20, 1, 0, 0), base, before, api.Unhealthy, "1 reconcile panics since the baseline"},
		{"no baseline, errors", snap(time.Minute, 2000, 200, 0, 0, 0), nil, nil, api.Degraded, "no baseline to compare with"},
		{"a burst of requeues", snap(time.Minute, 2000, 20, 0, 500, 0), base, before, api.Healthy, ""},
		{"not draining", snap(time.Minute, 1050, 10, 0, 500, 0), base, before, api.Degraded, "not draining"},
		{"slow reconcile", snap(time.Minute, 2000, 20, 0, 0, 400), base, before, api.Degraded, "running for 6m40s"},
		{"stuck reconcile", snap(time.Minute, 2000, 20, 0, 0, 1000), base, before, api.Unhealthy, "running for 16m40s"},
		// One conflict on a status write in twenty reconciles is 5 %: too few errors to judge.
		{"one error in twenty", snap(time.Minute, 1020, 11, 0, 0, 0), base, before, api.Healthy, "not judged: 1 errors in the window (fewer than 5)"},
	} {
		st := &metricsPart{api.MetricsStatus{Health: api.Healthy, Read: api.VerdictPassed, Messages: []string{}}}
		st.judge(tc.now, tc.base, tc.prev, DefaultMaxErrorRate)
		if st.Health != tc.want || (tc.msg != "" && !hasMessage(st.Messages, tc.msg)) {
			t.Errorf("%s: %s %v, want %s with %q", tc.name, st.Health, st.Messages, tc.want, tc.msg)
		}
	}
}

// TestMetricsVerdictGivenBefore: a restored release is judged since it was restored against the
// window before the deployment that the deployment's checks used (Baseline.BeforeWindow), not
// against one computed over the failed version's errors.
func TestMetricsVerdictGivenBefore(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	restored := &MetricsSnapshot{At: at, StartTime: 1, Total: 2000, Errors: 1000} // the failed version's errors
	now := &MetricsSnapshot{At: at.Add(time.Minute), StartTime: 1, Total: 2100, Errors: 1030}
	given := &api.RateWindow{Basis: BaselineLastHealthy, Reconciles: 500, Errors: 5, ErrorRate: 0.01}
	st := &metricsPart{api.MetricsStatus{Health: api.Healthy, Read: api.VerdictPassed, Messages: []string{}, Before: given}}
	st.judge(now, restored, nil, DefaultMaxErrorRate)
	if st.Health != api.Unhealthy || st.Before != given || !hasMessage(st.Messages, "30.0 % (30 of 100) since the baseline, 1.0 % before (last-healthy)") {
		t.Fatalf("%s %v (before %+v), want Unhealthy against the given 1 %% before", st.Health, st.Messages, st.Before)
	}
}
