// Package spantest records the spans a test makes: an in-memory recorder installed as the global
// tracer provider for the test's duration. For tests only.
package spantest

import (
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Record installs a span recorder as the global tracer provider until the test ends, when the
// previous provider is put back. It replaces a global: a test that calls it must not run in
// parallel with others that trace.
func Record(tb testing.TB) *tracetest.SpanRecorder {
	tb.Helper()
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	tb.Cleanup(func() { otel.SetTracerProvider(prev) })
	return rec
}
