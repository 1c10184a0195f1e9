package engine

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
)

// sentRequest is a request as it left for the API server: its path and the traceparent it carried.
type sentRequest struct {
	method, path string
	parent       trace.SpanContext
}

// wireClusters is the clusters package with an observer on the wire: it sees every request the
// clients of its configs send, after the manager's own transports added their headers.
type wireClusters struct {
	Clusters
	mu   sync.Mutex
	sent []sentRequest
}

func (w *wireClusters) RESTConfig(ctx context.Context, name string) (*rest.Config, error) {
	cfg, err := w.Clusters.RESTConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	outer := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		observed := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(r.Header)))
			w.mu.Lock()
			w.sent = append(w.sent, sentRequest{method: r.Method, path: r.URL.Path, parent: sc})
			w.mu.Unlock()
			return rt.RoundTrip(r)
		})
		if outer == nil {
			return observed
		}
		return outer(observed)
	}
	return cfg, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTrace_KubeRequestsCarryTheirSpan runs a Direct deployment and a health round with an
// in-memory span recorder and an observer on the wire: every Kubernetes request of the engine
// (planning's cluster.connect, the installs, the health checks) carries a W3C traceparent whose
// span is a client span under the span that made the request, including requests that client-go
// sends without a context (cluster.connect's GET /version, the health check's discovery). It
// replaces the global tracer provider, so it does not run in parallel.
func TestTrace_KubeRequestsCarryTheirSpan(t *testing.T) {
	rec := spantest.Record(t)
	wire := &wireClusters{}
	h := newHarness(t, []target{{Name: "wire-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.HealthLoop = false
		wire.Clusters = c.Clusters
		c.Clusters = wire
	})
	h.operator("wire", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "wire", "version": "1.0.0", "clusters": ["wire-1"], "strategy": "Direct"}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	h.eng.Stop()
	if n := h.eng.HealthRound(context.Background()); n != 1 {
		t.Fatalf("the health round checked %d releases, want 1", n)
	}

	spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Started() {
		spans[s.SpanContext().SpanID()] = s
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if len(wire.sent) == 0 {
		t.Fatal("no request went through the clusters' configs")
	}
	under := map[string]int{}
	versionUnderConnect := false
	for _, r := range wire.sent {
		if !r.parent.IsValid() {
			t.Fatalf("%s %s went out without a traceparent", r.method, r.path)
		}
		client, ok := spans[r.parent.SpanID()]
		if !ok || client.SpanKind() != trace.SpanKindClient || client.SpanContext().TraceID() != r.parent.TraceID() {
			t.Fatalf("%s %s: its traceparent names no client span of the manager", r.method, r.path)
		}
		maker, ok := spans[client.Parent().SpanID()]
		if !ok {
			t.Fatalf("%s %s: its client span has no parent among the manager's spans", r.method, r.path)
		}
		under[maker.Name()]++
		if r.path == "/version" && maker.Name() == telemetry.SpanClusterConnect {
			versionUnderConnect = true
		}
	}
	if !versionUnderConnect {
		t.Errorf("no GET /version under %s", telemetry.SpanClusterConnect)
	}
	for _, name := range []string{telemetry.SpanClusterConnect, "pod.healthcheck", "webhook.healthcheck", "crd.reconciliation.check", "crd.apply", "controller.deploy"} {
		if under[name] == 0 {
			t.Errorf("no request under %s; requests by span: %v", name, under)
		}
	}
	t.Logf("%d requests, by span: %v", len(wire.sent), under)
}
