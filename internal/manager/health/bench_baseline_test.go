package health

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health/healthtest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkHealthCheckBaseline measures the checks issue 27 added, at the size: one
// operator on the package's real kube-apiserver with 3 controller pods Ready and 500 custom
// resources (SLIPWAY_BENCH_HEALTH_RESOURCES_BASELINE) reconciled by a real controller-runtime
// controller (healthtest) whose metrics are read through the API server's Service proxy; 5 % of
// the resources fail for their tenants, in the baseline already. crd-reconciliation-baseline
// times the CRD part judging each resource against the baseline (decoded from its stored form
// once); metrics the metrics part (find the Service, read and parse, judge); capture
// Checker.Capture; full-operator-baseline Checker.Check with the baseline (four parts); and
// full-operator-baseline-x10 ten such checks at once, each timed (as the engine checks ten
// clusters at once: here ten times the same cluster, the same API server serving all ten). Every
// check must be Healthy. p50, p95, p99 over SLIPWAY_BENCH_HEALTH_SAMPLES checks per type.
//
//	go test ./internal/manager/health -run '^$' -bench HealthCheckBaseline -benchtime 1x
func BenchmarkHealthCheckBaseline(b *testing.B) {
	samples := testenv.Sizes(b, "SLIPWAY_BENCH_HEALTH_SAMPLES", 200)[0]
	resources := testenv.Sizes(b, "SLIPWAY_BENCH_HEALTH_RESOURCES_BASELINE", 500)[0]
	c, target := baselineBenchOperator(b, resources)
	cl, err := newClients(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	full := func(b *testing.B) api.HealthState {
		h, err := c.Check(ctx, "local", env.Config, target)
		if err != nil {
			b.Fatal(err)
		}
		if h.Health != api.Healthy {
			b.Logf("%+v", h)
		}
		return h.Health
	}
	types := []struct {
		name    string
		workers int
		check   func(b *testing.B) api.HealthState
	}{
		{"crd-reconciliation-baseline", 1, func(*testing.B) api.HealthState { s, _ := c.runCRDs(ctx, cl, target); return s.Health }},
		{"metrics", 1, func(*testing.B) api.HealthState { s, _ := c.runMetrics(ctx, cl, target); return s.Health }},
		{"capture", 1, func(b *testing.B) api.HealthState {
			if _, err := c.Capture(ctx, "local", env.Config, target); err != nil {
				b.Fatal(err)
			}
			return api.Healthy
		}},
		{"full-operator-baseline", 1, full},
		{"full-operator-baseline-x10", 10, full},
	}
	for _, tc := range types {
		b.Run(tc.name, func(b *testing.B) {
			var all []time.Duration
			for b.Loop() {
				all = append(all, timeChecks(b, samples, tc.workers, tc.check)...)
			}
			b.StopTimer()
			reportPercentiles(b, all)
		})
	}
}

// timeChecks runs n checks, workers at once, and returns each one's duration; each must be Healthy.
func timeChecks(b *testing.B, n, workers int, check func(*testing.B) api.HealthState) []time.Duration {
	out := make([]time.Duration, 0, n)
	var mu sync.Mutex
	for done := 0; done < n; done += workers {
		var wg sync.WaitGroup
		for range min(workers, n-done) {
			wg.Go(func() {
				start := time.Now()
				h := check(b)
				d := time.Since(start)
				mu.Lock()
				out = append(out, d)
				mu.Unlock()
				if h != api.Healthy {
					b.Errorf("check: %s", h)
				}
			})
		}
		wg.Wait()
	}
	return out
}

// baselineBenchOperator sets up the benchmark's operator, captures its baseline (stored form
// and back) and waits until a check with it is Healthy with the metrics read.
func baselineBenchOperator(b *testing.B, resources int) (*Checker, Target) {
	installGizmoCRD(b)
	ns := namespace(b)
	operatorDeployment(b, ns, "bench", 3, nil, nil)
	var failing []string
	for i := range resources {
		name := fmt.Sprintf("g%03d", i)
		if err := env.Client.Create(context.Background(), gizmo(ns, name)); err != nil {
			b.Fatal(err)
		}
		if i%20 == 0 {
			failing = append(failing, name)
		}
	}
	// Requeued every 10 s: 50 reconciles a second over 500 resources, steady metrics.
	op := healthtest.Start(b, env.Config, healthtest.Options{Namespace: ns, Release: "bench", GVK: gizmoGVK, Requeue: 10 * time.Second})
	op.SetFailing(failing...)
	c := NewChecker(Config{})
	target := Target{OperatorName: "bench", Namespace: ns, Release: "bench", CRDs: []string{gizmoCRD}}
	checkUntil(b, c, target, "every resource reconciled", func(h Result) bool {
		return h.CRDs.Ready == resources-len(failing) && h.CRDs.Failing == len(failing) && h.Pods.Ready == 3
	})
	base, err := c.Capture(testCtx(b), "local", env.Config, target)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := EncodeBaseline(base)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("baseline of %d resources: %d bytes stored (gzipped JSON)", resources, len(raw))
	if target.Baseline, err = DecodeBaseline(raw); err != nil {
		b.Fatal(err)
	}
	checkUntil(b, c, target, "Healthy against the baseline, metrics read", func(h Result) bool {
		return h.Health == api.Healthy && h.Metrics.Read == api.VerdictPassed && h.CRDs.TenantFailures.FailingBefore == len(failing)
	})
	return c, target
}
