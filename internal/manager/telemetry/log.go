// Package telemetry is the manager's logs, metrics and traces: an slog logger that stamps every
// record with the request, trace, span and user of its context; one Prometheus registry with the
// manager's metrics; and OpenTelemetry tracing with W3C propagation and an optional OTLP/HTTP
// exporter.
package telemetry

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	userIDKey
)

// Log keys the context handler adds.
const (
	KeyRequestID = "requestId"
	KeyTraceID   = "traceId"
	KeySpanID    = "spanId"
	KeyUserID    = "userId"
)

// WithRequestID returns ctx carrying the request id id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

// RequestID is the request id in ctx, or "".
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey).(string)
	return s
}

// WithUserID returns ctx carrying the authenticated user's id (the token's subject).
func WithUserID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, userIDKey, id)
}

// UserID is the user id in ctx, or "".
func UserID(ctx context.Context) string {
	s, _ := ctx.Value(userIDKey).(string)
	return s
}

// NewRequestID returns a random id of 26 characters from [A-Z2-7].
func NewRequestID() string { return rand.Text() }

// NewLogger returns a logger writing to w at level, as JSON or, when format is "text", as
// logfmt-like text (anything else is JSON). Every record gets requestId, traceId, spanId and
// userId from the context of its *Context call, when the context has them.
func NewLogger(w io.Writer, level slog.Leveler, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(NewContextHandler(h))
}

// NewContextHandler wraps h so that records carry the ids found in their context. Inside a
// WithGroup the ids land in the group, like any attribute added there.
func NewContextHandler(h slog.Handler) slog.Handler { return contextHandler{h} }

type contextHandler struct{ inner slog.Handler }

func (h contextHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String(KeyRequestID, id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String(KeyTraceID, sc.TraceID().String()), slog.String(KeySpanID, sc.SpanID().String()))
	}
	if id := UserID(ctx); id != "" {
		r.AddAttrs(slog.String(KeyUserID, id))
	}
	return h.inner.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.inner.WithAttrs(as)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.inner.WithGroup(name)}
}
