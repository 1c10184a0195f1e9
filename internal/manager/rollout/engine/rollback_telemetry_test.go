package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestRollback_SpansAndMetrics rolls an upgrade back on request with an in-memory span recorder:
// the rollback is one operator.rollback span (the engine's), with the Helm work (helm.rollback)
// and the restored release's check (operator.healthcheck) under it, and no second
// operator.rollback; the rollback counter and duration move. It replaces the global tracer
// provider, so it does not run in parallel.
func TestRollback_SpansAndMetrics(t *testing.T) {
	rec := spantest.Record(t)
	before := rollbackMetrics(t, "manual", "rolledBack")
	h := newHarness(t, []target{{Name: "rbspan-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) { c.HealthLoop = false })
	h.operator("rbspans",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible))
	h.start()
	first := h.submit(`{"operator": "rbspans", "version": "1.0.0", "clusters": ["rbspan-1"], "strategy": "Direct"}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)
	d := h.submit(`{"operator": "rbspans", "version": "1.0.1", "clusters": ["rbspan-1"], "strategy": "Direct"}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	if _, err := h.eng.Rollback(t.Context(), d.ID, "alice", "spans"); err != nil {
		t.Fatal(err)
	}
	h.waitRolledBack(d.ID)
	h.eng.Stop()

	spans := rec.Ended()
	byID := map[string]sdktrace.ReadOnlySpan{}
	var rollbacks []sdktrace.ReadOnlySpan
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
		if s.Name() == "operator.rollback" {
			rollbacks = append(rollbacks, s)
		}
	}
	if len(rollbacks) != 1 {
		t.Fatalf("%d operator.rollback spans, want 1 (the engine's; the per-cluster Helm rollback is helm.rollback)", len(rollbacks))
	}
	root := rollbacks[0].SpanContext().SpanID().String()
	children := map[string]int{}
	for _, s := range spans {
		if s.Parent().SpanID().String() == root {
			children[s.Name()]++
		}
		if s.Name() == "helm.rollback" {
			if p, ok := byID[s.Parent().SpanID().String()]; !ok || p.Name() != "operator.rollback" {
				t.Errorf("helm.rollback is not under operator.rollback")
			}
		}
	}
	if children["helm.rollback"] != 1 || children["operator.healthcheck"] < 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name())
		}
		slices.Sort(names)
		t.Errorf("under operator.rollback: %v, want one helm.rollback and the restored release's operator.healthcheck; spans: %v", children, slices.Compact(names))
	}
	assertRollbackMetrics(t, before, "manual", "rolledBack")
}

// rollbackCounts are the rollback metrics of one trigger and result, to compare before and after.
type rollbackCounts struct{ total, durations, failed float64 }

func rollbackMetrics(t *testing.T, trigger, result string) rollbackCounts {
	t.Helper()
	return rollbackCounts{
		total:     metricValue(t, "slipway_manager_operators_rollback_total", map[string]string{"trigger": trigger, "result": result}),
		durations: metricValue(t, "slipway_manager_operator_rollback_duration_seconds", map[string]string{"result": result}),
		failed:    metricValue(t, "slipway_manager_operators_failed_total", map[string]string{"step": "rollback"}),
	}
}

// assertRollbackMetrics checks that one rollback of trigger ended with result since before: the
// counter and the duration histogram moved by one, and operators_failed_total{step="rollback"}
// by one when it failed (else not at all). The engine counts a rollback just after it stores its
// end, so a test that saw the end waits (briefly) for the counters to catch up.
func assertRollbackMetrics(t *testing.T, before rollbackCounts, trigger, result string) {
	t.Helper()
	wantFailed := before.failed
	if result == "failed" {
		wantFailed++
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var now rollbackCounts
	testenv.Eventually(ctx, t, "the rollback metrics count the rollback", func() (bool, error) {
		now = rollbackMetrics(t, trigger, result)
		return now.total >= before.total+1 && now.durations >= before.durations+1 && now.failed >= wantFailed, nil
	})
	if now.total != before.total+1 || now.durations != before.durations+1 || now.failed != wantFailed {
		t.Errorf("operators_rollback_total{trigger=%s,result=%s} %v → %v, operator_rollback_duration_seconds{result=%s} count %v → %v, operators_failed_total{step=rollback} %v → %v; want +1, +1, %v",
			trigger, result, before.total, now.total, result, before.durations, now.durations, before.failed, now.failed, wantFailed)
	}
}
