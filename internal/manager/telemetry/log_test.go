package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slipway-dev/slipway/internal/manager/designtest"
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
				t.Errorf("%q: %s = %v, want %s", l[KeyMessage], k, l[k], want)
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

// designLogFile is the design's example log line, copied verbatim from operator-manager-spec.md
// ("Observability Requirements", "Logging").
var designLogFile = filepath.Join("testdata", "design-log.json")

// TestDesignLogFields: a deployment's line has the design's keys, each with the design's JSON
// type, and the design's level names; the built-in keys are renamed, not doubled; userId is the
// context's caller when it has one (who asked), the deployment's requester otherwise.
func TestDesignLogFields(t *testing.T) {
	design := designtest.Load(t, designLogFile)
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelDebug, "json")
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))
	ctx = WithDeployment(ctx, Deployment{ID: "deploy-456", Operator: "cert-manager", Version: "v1.14.0", UserID: "admin@example.com"})

	before := time.Now().UTC().Truncate(time.Millisecond)
	log.InfoContext(WithCluster(ctx, "production-us-east"), "Operator deployed successfully")
	log.DebugContext(ctx, "a deployment-wide line")
	log.WarnContext(ctx, "a warning", "cluster", "named-by-the-record")
	log.ErrorContext(WithUserID(ctx, "someone-else"), "an error")
	log.Log(ctx, slog.LevelWarn+2, "between warning and error")

	lines := decodeLines(t, &buf)
	if len(lines) != 5 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	for i, l := range lines {
		if diff := designtest.Types(design, l); len(diff) != 0 {
			t.Errorf("line %d %v: not the design's shape: %v", i, l, diff)
		}
		for _, gone := range []string{"time", "msg"} {
			if _, ok := l[gone]; ok {
				t.Errorf("line %d keeps %q: %v", i, gone, l)
			}
		}
		ts, err := time.Parse(time.RFC3339, l[KeyTimestamp].(string))
		if err != nil || ts.Before(before) || ts.Location() != time.UTC || !strings.HasSuffix(l[KeyTimestamp].(string), "Z") {
			t.Errorf("line %d timestamp %v: want RFC 3339 in UTC, now (%v)", i, l[KeyTimestamp], err)
		}
		user := "admin@example.com" // the deployment's, with no caller in the context
		if i == 3 {
			user = "someone-else" // the context's caller: who asked, whoever requested the deployment
		}
		if l[KeyTraceID] != traceID.String() || l[KeyDeploymentID] != "deploy-456" || l[KeyOperatorName] != "cert-manager" ||
			l[KeyVersion] != "v1.14.0" || l[KeyUserID] != user {
			t.Errorf("line %d: %v", i, l)
		}
	}
	for i, want := range []struct{ level, message, cluster string }{
		{"INFO", "Operator deployed successfully", "production-us-east"},
		{"DEBUG", "a deployment-wide line", ""},
		{"WARNING", "a warning", "named-by-the-record"},
		{"ERROR", "an error", ""},
		{"WARNING", "between warning and error", ""},
	} {
		if l := lines[i]; l[KeyLevel] != want.level || l[KeyMessage] != want.message || l[KeyCluster] != want.cluster {
			t.Errorf("line %d: %v, want level %s, message %q, cluster %q", i, l, want.level, want.message, want.cluster)
		}
	}
	// Each key once: JSON with a key twice would decode to its last value unnoticed.
	for i, raw := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		for _, k := range designtest.Keys(design) {
			if n := strings.Count(raw, `"`+k+`":`); n != 1 {
				t.Errorf("line %d has %q %d times: %s", i, k, n, raw)
			}
		}
	}
	// The example itself: every key a string, as this logger writes them.
	for _, k := range designtest.Keys(design) {
		if designtest.TypeOf(design.(map[string]any)[k]) != "string" {
			t.Errorf("the design's %s is not a string", k)
		}
	}
}

// TestDeploymentLineWithoutTrace: a deployment's line outside any span still has traceId (empty),
// and a line of no deployment gets none of the deployment's fields.
func TestDeploymentLineWithoutTrace(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo, "json")
	ctx := WithDeployment(context.Background(), Deployment{ID: "d1", Operator: "op", Version: "1.0.0", UserID: "olga"})
	log.InfoContext(ctx, "engine: Deployment Planning")
	log.InfoContext(context.Background(), "not a deployment's")
	lines := decodeLines(t, &buf)
	if diff := designtest.Types(designtest.Load(t, designLogFile), lines[0]); len(diff) != 0 || lines[0][KeyTraceID] != "" {
		t.Errorf("a deployment's line without a trace: %v (%v)", lines[0], diff)
	}
	if _, ok := lines[0][KeySpanID]; ok {
		t.Errorf("a spanId without a span: %v", lines[0])
	}
	for _, k := range []string{KeyTraceID, KeyDeploymentID, KeyOperatorName, KeyVersion, KeyCluster, KeyUserID} {
		if _, ok := lines[1][k]; ok {
			t.Errorf("a line of no deployment carries %s: %v", k, lines[1])
		}
	}
	if lines[1][KeyLevel] != "INFO" || lines[1][KeyMessage] != "not a deployment's" {
		t.Errorf("plain line: %v", lines[1])
	}
}

func TestLevelNames(t *testing.T) {
	for l, want := range map[slog.Level]string{slog.LevelDebug - 4: "DEBUG", slog.LevelDebug: "DEBUG", slog.LevelInfo: "INFO",
		slog.LevelInfo + 1: "INFO", slog.LevelWarn: "WARNING", slog.LevelError: "ERROR", slog.LevelError + 4: "ERROR"} {
		if got := LevelName(l); got != want {
			t.Errorf("LevelName(%v) = %s, want %s", l, got, want)
		}
	}
}
