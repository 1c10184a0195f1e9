package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func decodeLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLoggerAddsContextIDs(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo, "json")
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	ctx = WithUserID(WithRequestID(ctx, "req-1"), "alice")

	log.InfoContext(ctx, "server: Request", "route", "GET /api/v1/clusters")
	log.With("cluster", "prod-eu").WarnContext(ctx, "clusters: Unhealthy")
	log.DebugContext(ctx, "dropped below the level")
	log.Info("no context")

	lines := decodeLines(t, &buf)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %s", len(lines), buf.String())
	}
	for _, l := range lines[:2] {
		for k, want := range map[string]string{KeyRequestID: "req-1", KeyTraceID: traceID.String(), KeySpanID: spanID.String(), KeyUserID: "alice"} {
			if l[k] != want {
				t.Errorf("%q: %s = %v, want %s", l["msg"], k, l[k], want)
			}
		}
	}
	if lines[1]["cluster"] != "prod-eu" {
		t.Errorf("With attrs lost: %v", lines[1])
	}
	for _, k := range []string{KeyRequestID, KeyTraceID, KeySpanID, KeyUserID} {
		if _, ok := lines[2][k]; ok {
			t.Errorf("a record without context carries %s: %v", k, lines[2])
		}
	}
}

func TestTextLoggerAndGroups(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelDebug, "text").WithGroup("store")
	log.DebugContext(WithRequestID(context.Background(), "r2"), "store: Query", "table", "clusters")
	got := buf.String()
	if !strings.Contains(got, "store.requestId=r2") || !strings.Contains(got, "store.table=clusters") {
		t.Fatalf("text log = %q", got)
	}
}

func TestContextAccessors(t *testing.T) {
	ctx := context.Background()
	if RequestID(ctx) != "" || UserID(ctx) != "" {
		t.Fatal("ids in an empty context")
	}
	a, b := NewRequestID(), NewRequestID()
	if a == b || !regexp.MustCompile(`^[A-Z2-7]{26}$`).MatchString(a) {
		t.Fatalf("request ids %q, %q", a, b)
	}
	if RequestID(WithRequestID(ctx, a)) != a || UserID(WithUserID(ctx, "bob")) != "bob" {
		t.Fatal("accessors do not return what was stored")
	}
}
