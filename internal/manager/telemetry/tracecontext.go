package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceContext is the W3C trace context of ctx's span, to store with what the span created: its
// traceparent, then its tracestate after a newline when it has one. "" when ctx has no valid span.
func TraceContext(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	tc := carrier.Get("traceparent")
	if tc == "" {
		return ""
	}
	if ts := carrier.Get("tracestate"); ts != "" {
		tc += "\n" + ts
	}
	return tc
}

// WithTraceContext returns ctx whose span is the remote span of a stored TraceContext, so spans
// started from it join that trace as its children. ctx is returned as it is when tc is empty or
// not a valid trace context.
func WithTraceContext(ctx context.Context, tc string) context.Context {
	parent, state, _ := strings.Cut(tc, "\n")
	carrier := propagation.MapCarrier{"traceparent": parent}
	if state != "" {
		carrier["tracestate"] = state
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
