package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/designtest"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// designLogFile is the design's example log line (operator-manager-spec.md, "Logging"), kept once
// in the telemetry package's testdata.
var designLogFile = filepath.Join("..", "..", "telemetry", "testdata", "design-log.json")

// TestLogs_DesignFieldsOnEveryLine runs a deployment through the engine on a real cluster, with
// the manager's logger (telemetry.NewLogger) and a real tracer, submitted under a request span by
// admin@example.com: every log line that names the deployment (by deploymentId, or anywhere in
// its values) carries each of the design's keys with the design's JSON type, and the
// deployment's values in them: its trace, operator, version and requester; the lines of a
// cluster's step name the cluster. It replaces the global tracer provider, so it does not run in
// parallel.
func TestLogs_DesignFieldsOnEveryLine(t *testing.T) {
	spantest.Record(t)
	logs := &testenv.SyncBuffer{}
	h := newHarness(t, []target{{Name: "logs-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.Logger = telemetry.NewLogger(logs, slog.LevelDebug, "json")
		c.Checker = health.NewChecker(health.Config{Logger: c.Logger})
	})
	h.operator("logged", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))

	post, span := telemetry.Tracer().Start(context.Background(), "POST /api/v1/deployments")
	req, err := request.Decode([]byte(`{"operator": "logged", "version": "1.0.0", "clusters": ["logs-1"], "strategy": "Direct",
		"directConfig": {"parallelClusters": 1, "skipHealthChecks": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.eng.Submit(post, req, "admin@example.com", "req-logs")
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	h.start()
	h.waitStatus(d.ID, store.DeploymentCompleted)
	h.eng.Stop()

	design := designtest.Load(t, designLogFile)
	lines := deploymentLines(t, logs.String(), d.ID)
	var messages []string
	for _, l := range lines {
		raw, _ := json.Marshal(l)
		if diff := designtest.Types(design, l); len(diff) != 0 {
			t.Errorf("not the design's shape (%v): %s", diff, raw)
			continue
		}
		messages = append(messages, l[telemetry.KeyMessage].(string)+"@"+l[telemetry.KeyCluster].(string))
		if l[telemetry.KeyDeploymentID] != d.ID || l[telemetry.KeyOperatorName] != "logged" || l[telemetry.KeyVersion] != "1.0.0" ||
			l[telemetry.KeyUserID] != "admin@example.com" || l[telemetry.KeyTraceID] != span.SpanContext().TraceID().String() {
			t.Errorf("not the deployment's values (trace %s): %s", span.SpanContext().TraceID(), raw)
		}
		if !slices.Contains([]string{"DEBUG", "INFO", "WARNING", "ERROR"}, l[telemetry.KeyLevel].(string)) {
			t.Errorf("level: %s", raw)
		}
		if ts, err := time.Parse(time.RFC3339, l[telemetry.KeyTimestamp].(string)); err != nil || ts.Location() != time.UTC {
			t.Errorf("timestamp not RFC 3339 in UTC (%v): %s", err, raw)
		}
		for _, gone := range []string{"time", "msg"} {
			if _, ok := l[gone]; ok {
				t.Errorf("keeps %q: %s", gone, raw)
			}
		}
	}
	for _, want := range []string{"engine: Deployment Deploying@", "engine: cluster.installing@logs-1",
		"engine: cluster.installed@logs-1", "health: Checked@logs-1", "engine: Deployment Completed@"} {
		if !slices.Contains(messages, want) {
			t.Errorf("no line %q among the deployment's: %q", want, messages)
		}
	}
}

// deploymentLines are the JSON log lines that name deployment id: by deploymentId, or with the
// id in any value (a line that should carry the fields and does not).
func deploymentLines(t *testing.T, logs, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), id) {
			continue
		}
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %s", sc.Bytes())
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		t.Fatalf("no log line names deployment %s:\n%s", id, logs)
	}
	return out
}
