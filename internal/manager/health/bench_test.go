package health

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkHealthChecks measures each type of check of the design's table ("Health Check
// Performance") on one operator of a real kube-apiserver (the package's full control plane, kwok
// pods): 3 controller pods Running and Ready, a validating webhook served by the benchmark over
// TLS (called and its certificate verified), and a CRD with resources custom resources kept
// Ready by a controller of the benchmark. pod, webhook and crd-reconciliation time one part as
// Check runs it (its span, timeout and metric; the clients already built); full-operator times
// Check itself (clients built, the three parts concurrently), as the health loop and
// deployments call it. Each sample must be Healthy. It reports p50, p95 and p99 over samples
// checks per benchmark iteration.
//
//	SLIPWAY_BENCH_HEALTH_SAMPLES=200 SLIPWAY_BENCH_HEALTH_RESOURCES=20 \
//	  go test -tags e2e ./internal/manager/health -run '^$' -bench HealthChecks -benchtime 1x
func BenchmarkHealthChecks(b *testing.B) {
	samples := testenv.Sizes(b, "SLIPWAY_BENCH_HEALTH_SAMPLES", 200)[0]
	resources := testenv.Sizes(b, "SLIPWAY_BENCH_HEALTH_RESOURCES", 20)[0]
	c, target := benchOperator(b, resources)
	cl, err := newClients(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	types := []struct {
		name  string
		check func(b *testing.B) (api.HealthState, []string)
	}{
		{"pod", func(*testing.B) (api.HealthState, []string) {
			s := c.runPods(ctx, cl, "local", target)
			return s.Health, s.Messages
		}},
		{"webhook", func(*testing.B) (api.HealthState, []string) {
			s := c.runWebhooks(ctx, cl, target)
			return s.Health, s.Messages
		}},
		{"crd-reconciliation", func(*testing.B) (api.HealthState, []string) {
			s, _ := c.runCRDs(ctx, cl, target)
			return s.Health, s.Messages
		}},
		{"full-operator", func(b *testing.B) (api.HealthState, []string) {
			h, err := c.Check(ctx, "local", env.Config, target)
			if err != nil {
				b.Fatal(err)
			}
			return h.Health, []string{fmt.Sprintf("%+v", h)}
		}},
	}
	for _, tc := range types {
		b.Run(tc.name, func(b *testing.B) {
			var all []time.Duration
			for b.Loop() {
				for range samples {
					start := time.Now()
					h, msgs := tc.check(b)
					all = append(all, time.Since(start))
					if h != api.Healthy {
						b.Fatalf("%s check: %s %v", tc.name, h, msgs)
					}
				}
			}
			b.StopTimer()
			reportPercentiles(b, all)
		})
	}
}

// benchOperator sets up the benchmark's operator and waits until a check finds it all healthy.
func benchOperator(b *testing.B, resources int) (*Checker, Target) {
	installGizmoCRD(b)
	ns := namespace(b)
	operatorDeployment(b, ns, "bench", 3, nil, nil)
	srv := newWebhookServer(b)
	validatingWebhookIn(b, ns, "bench-"+ns, "bench", srv.URL+"/validate", srv.caBundle())
	for i := range resources {
		if err := env.Client.Create(context.Background(), gizmo(ns, fmt.Sprintf("g%03d", i))); err != nil {
			b.Fatal(err)
		}
	}
	startOperator(b, ns)
	c := NewChecker(Config{})
	target := Target{OperatorName: "bench", Namespace: ns, Release: "bench", CRDs: []string{gizmoCRD}}
	checkUntil(b, c, target, "the operator healthy", func(h Result) bool {
		return h.Health == api.Healthy && h.ControllerPods == 3 && h.WebhookStatus == api.WebhookAvailable &&
			h.CRDReconciliation == api.ReconciliationActive && h.CRDs.Ready == resources
	})
	return c, target
}

// reportPercentiles reports the p50, p95 and p99 of durations in milliseconds.
func reportPercentiles(b *testing.B, durations []time.Duration) {
	slices.Sort(durations)
	for _, p := range []int{50, 95, 99} {
		// The nearest-rank percentile: the smallest duration with p % of them at or below it.
		i := max(0, (p*len(durations)+99)/100-1)
		b.ReportMetric(float64(durations[i].Microseconds())/1000, fmt.Sprintf("p%d-ms", p))
	}
	b.ReportMetric(float64(len(durations)), "samples")
}
