// Package telemetry is the manager's logs, metrics and traces: an slog logger that stamps every
// record with the request, trace, span and user of its context; one Prometheus registry with the
// manager's metrics; and OpenTelemetry tracing with W3C propagation and an optional OTLP/HTTP
// exporter.
package telemetry

import (
	"cmp"
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

// The design's log fields (operator-manager-spec.md, "Logging"): the record's time, level and
// message under these keys, and, on every line written for a deployment, the deployment's
// fields (WithDeployment) and the cluster (WithCluster).
const (
	KeyTimestamp    = "timestamp"
	KeyLevel        = "level"
	KeyMessage      = "message"
	KeyOperatorName = "operatorName"
	KeyVersion      = "version"
	KeyCluster      = "cluster"
	KeyDeploymentID = "deploymentId"
)

// The level names: the design's Debug, Info, Warning and Error, upper-case as in its example.
const (
	LevelDebug   = "DEBUG"
	LevelInfo    = "INFO"
	LevelWarning = "WARNING"
	LevelError   = "ERROR"
)

// TimestampLayout is how KeyTimestamp is written: RFC 3339 in UTC, with milliseconds.
const TimestampLayout = "2006-01-02T15:04:05.000Z07:00"

// NewLogger returns a logger writing to w at level, as JSON or, when format is "text", as
// logfmt-like text (anything else is JSON). Records carry the design's keys (timestamp, level,
// message; ReplaceAttr) and whatever NewContextHandler adds from their context.
func NewLogger(w io.Writer, level slog.Leveler, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: DesignAttr}
	var h slog.Handler
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(NewContextHandler(h))
}

// DesignAttr is a slog.HandlerOptions.ReplaceAttr that writes a record's built-in attributes as
// the design's log fields: time as timestamp (TimestampLayout), msg as message, and the level as
// DEBUG, INFO, WARNING or ERROR (a level between two takes the lower name).
func DesignAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		if a.Value.Kind() == slog.KindTime {
			return slog.String(KeyTimestamp, a.Value.Time().UTC().Format(TimestampLayout))
		}
	case slog.MessageKey:
		return slog.Attr{Key: KeyMessage, Value: a.Value}
	case slog.LevelKey:
		if l, ok := a.Value.Any().(slog.Level); ok {
			return slog.String(KeyLevel, LevelName(l))
		}
	}
	return a
}

// LevelName is the design's name of l.
func LevelName(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return LevelDebug
	case l < slog.LevelWarn:
		return LevelInfo
	case l < slog.LevelError:
		return LevelWarning
	}
	return LevelError
}

// Deployment is what every log line written for a deployment carries: the design's
// deploymentId, operatorName, version and userId. UserID is who asked for the work the line is
// about when no caller is in the line's context (the engine's own loops: the deployment's
// requester); a line written while serving a request carries that request's caller instead
// (WithUserID), whoever requested the deployment.
type Deployment struct {
	ID, Operator, Version, UserID string
}

type deploymentKey struct{}

type clusterKey struct{}

// WithDeployment returns ctx whose log lines are the deployment d's: they carry the design's
// fields, traceId (empty without a trace) and cluster (empty unless WithCluster names one: a
// line about the deployment as a whole, not one cluster's step, keeps the key with "").
func WithDeployment(ctx context.Context, d Deployment) context.Context {
	return context.WithValue(ctx, deploymentKey{}, d)
}

// WithCluster returns ctx whose deployment log lines name cluster.
func WithCluster(ctx context.Context, cluster string) context.Context {
	return context.WithValue(ctx, clusterKey{}, cluster)
}

// DeploymentOf is the deployment of ctx's log lines, if any.
func DeploymentOf(ctx context.Context) (Deployment, bool) {
	d, ok := ctx.Value(deploymentKey{}).(Deployment)
	return d, ok
}

// NewContextHandler wraps h so that records carry the ids found in their context: requestId,
// traceId and spanId, userId; and on a deployment's lines (WithDeployment) the design's fields,
// every one of them, with userId the caller who asked: the context's user (WithUserID: the
// request's caller, or the user the engine acts for) or else the Deployment's UserID. An
// attribute the record already has is not added again. Inside a WithGroup the ids land in the
// group, like any attribute added there.
func NewContextHandler(h slog.Handler) slog.Handler { return contextHandler{h} }

type contextHandler struct{ inner slog.Handler }

func (h contextHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	has := map[string]bool{}
	r.Attrs(func(a slog.Attr) bool {
		has[a.Key] = true
		return true
	})
	add := func(key, value string) {
		if !has[key] {
			has[key] = true
			r.AddAttrs(slog.String(key, value))
		}
	}
	if id := RequestID(ctx); id != "" {
		add(KeyRequestID, id)
	}
	d, isDeployment := DeploymentOf(ctx)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		add(KeyTraceID, sc.TraceID().String())
		add(KeySpanID, sc.SpanID().String())
	} else if isDeployment {
		add(KeyTraceID, "")
	}
	if isDeployment {
		cluster, _ := ctx.Value(clusterKey{}).(string)
		add(KeyOperatorName, d.Operator)
		add(KeyVersion, d.Version)
		add(KeyCluster, cluster)
		add(KeyDeploymentID, d.ID)
		add(KeyUserID, cmp.Or(UserID(ctx), d.UserID))
	}
	if id := UserID(ctx); id != "" {
		add(KeyUserID, id)
	}
	return h.inner.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.inner.WithAttrs(as)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.inner.WithGroup(name)}
}
