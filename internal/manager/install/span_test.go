package install

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
)

// TestSpansAndTraceContext installs, upgrades and rolls back with an in-memory span recorder and
// a transport that sees every request as sent: helm.install has crd.apply and controller.deploy
// under it, Rollback runs in helm.rollback, every Kubernetes request carries a W3C
// traceparent of its call's trace, a client span under one of those spans, and the requests
// counted are the requests sent. It replaces the global tracer provider, so it does not run in
// parallel.
func TestSpansAndTraceContext(t *testing.T) {
	rec := spantest.Record(t)
	okBefore := installCount(t, "success")

	var mu sync.Mutex
	var traceIDs []trace.TraceID
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
			mu.Lock()
			traceIDs = append(traceIDs, sc.TraceID())
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	}

	ctx := testContext(t)
	const name, ns = "traced", "op-traced"
	ch := loadChart(t, "1.1.0", charttest.Compatible, nil)
	var requests int64
	for _, values := range []map[string]any{nil, {"replicas": 2}} {
		res, err := Install(ctx, cfg, Release{Name: name, Namespace: ns, Chart: ch, Values: values, Timeout: 45 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		requests += res.APIRequests
	}
	res, err := Rollback(ctx, cfg, name, ns, 1)
	if err != nil {
		t.Fatal(err)
	}
	requests += res.APIRequests

	byName := map[string][]sdktrace.ReadOnlySpan{}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
		byID[s.SpanContext().SpanID()] = s
	}
	installs, rollbacks := byName[spanHelmInstall], byName[spanHelmRollback]
	if len(installs) != 2 || len(rollbacks) != 1 || len(byName[spanCRDApply]) != 2 || len(byName[spanControllerDeploy]) != 2 {
		t.Fatalf("spans: %d helm.install, %d crd.apply, %d controller.deploy, %d helm.rollback; want 2, 2, 2, 1",
			len(installs), len(byName[spanCRDApply]), len(byName[spanControllerDeploy]), len(rollbacks))
	}
	var traces []trace.TraceID
	for _, s := range append(slices.Clone(installs), rollbacks...) {
		traces = append(traces, s.SpanContext().TraceID())
	}
	for _, n := range []string{spanCRDApply, spanControllerDeploy} {
		for _, s := range byName[n] {
			if p, ok := byID[s.Parent().SpanID()]; !ok || p.Name() != spanHelmInstall {
				t.Fatalf("%s is not under helm.install", n)
			}
		}
	}
	parents := []string{spanCRDApply, spanControllerDeploy, spanHelmRollback}
	clientSpans := 0
	// Started, not Ended: a watch's span ends when its body is closed, which may come later.
	for _, s := range rec.Started() {
		if s.SpanKind() != trace.SpanKindClient {
			continue
		}
		clientSpans++
		if p, ok := byID[s.Parent().SpanID()]; !ok || !slices.Contains(parents, p.Name()) {
			t.Fatalf("Kubernetes request span %s is not under crd.apply, controller.deploy or helm.rollback", s.Name())
		}
	}

	mu.Lock()
	defer mu.Unlock()
	if int64(len(traceIDs)) != requests || int64(clientSpans) != requests {
		t.Fatalf("%d requests sent, %d client spans, %d counted", len(traceIDs), clientSpans, requests)
	}
	for i, id := range traceIDs {
		if !slices.Contains(traces, id) {
			t.Fatalf("request %d carried trace %v, not one of the calls' traces", i, id)
		}
	}
	if got := installCount(t, "success") - okBefore; got != 2 {
		t.Fatalf("slipway_manager_helm_install_duration_seconds{result=success} count grew by %d, want 2", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// installCount is the sample count of the helm.install.duration histogram for result.
func installCount(t *testing.T, result string) uint64 {
	t.Helper()
	m := &dto.Metric{}
	if err := telemetry.HelmInstallDuration.WithLabelValues(result).(interface{ Write(*dto.Metric) error }).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
