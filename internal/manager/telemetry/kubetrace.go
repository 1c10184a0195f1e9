package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
)

// propagator is the W3C trace context (and baggage) the manager sends and reads, whatever
// propagator the process has installed globally.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// TraceKubeRequests makes every client built from cfg send each request as a client span
// "k8s <METHOD>" under the span of the request's context, with that span's W3C traceparent.
// A config traced twice (a copy of a traced one, traced again) still sends each request once
// through one span.
func TraceKubeRequests(cfg *rest.Config) { cfg.Wrap(KubeTransport) }

// KubeTransport is the round tripper TraceKubeRequests installs, for a transport built by hand.
func KubeTransport(rt http.RoundTripper) http.RoundTripper {
	return &kubeTracing{plain: rt, traced: otelhttp.NewTransport(rt,
		otelhttp.WithPropagators(propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "k8s " + r.Method }))}
}

// FollowSpan makes the requests of clients built from cfg that carry no span in their context
// (client-go's calls without a context, such as Discovery().ServerVersion()) go out under the
// span of ctx. Call it on a config of one call, after TraceKubeRequests.
func FollowSpan(ctx context.Context, cfg *rest.Config) {
	span := trace.SpanFromContext(ctx)
	if !span.SpanContext().IsValid() {
		return
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &followSpan{span: span, next: rt} })
}

// kubeTracing traces a request unless an outer kubeTracing already did.
type kubeTracing struct{ plain, traced http.RoundTripper }

type tracedKey struct{}

func (t *kubeTracing) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(tracedKey{}) != nil {
		return t.plain.RoundTrip(req)
	}
	return t.traced.RoundTrip(req.WithContext(context.WithValue(req.Context(), tracedKey{}, true)))
}

// followSpan gives a request without a span in its context the span it follows.
type followSpan struct {
	span trace.Span
	next http.RoundTripper
}

func (f *followSpan) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		req = req.WithContext(trace.ContextWithSpan(req.Context(), f.span))
	}
	return f.next.RoundTrip(req)
}
