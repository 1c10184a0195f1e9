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

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/designtest"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// designLogFile is the design's example log line (operator-manager-spec.md, "Logging"), kept once
// in the telemetry package's testdata.
var designLogFile = filepath.Join("..", "..", "telemetry", "testdata", "design-log.json")

// The tests of this file check the engine's log lines against the design's fields: each runs
// deployments through the engine on real clusters with the manager's logger
// (telemetry.NewLogger) and a real tracer, submitted under a request span as the API does, and
// checks every line of the run (checkDeploymentLines). They replace the global tracer provider,
// so they do not run in parallel.

// loggedHarness is a harness whose engine and health checker write the manager's JSON log lines
// to the returned buffer.
func loggedHarness(t *testing.T, targets []target, mod func(*Config)) (*harness, *testenv.SyncBuffer) {
	t.Helper()
	spantest.Record(t)
	logs := &testenv.SyncBuffer{}
	h := newHarness(t, targets, func(c *Config) {
		c.Logger = telemetry.NewLogger(logs, slog.LevelDebug, "json")
		c.Checker = health.NewChecker(health.Config{Logger: c.Logger})
		if mod != nil {
			mod(c)
		}
	})
	return h, logs
}

// submitAs submits body as user the way the API does: under the request's span, with user as
// the request's caller in the context and as the requester. It returns the deployment and the
// request's trace id.
func submitAs(t *testing.T, h *harness, user, body string) (*store.Deployment, string) {
	t.Helper()
	ctx, span := telemetry.Tracer().Start(context.Background(), "POST /api/v1/deployments")
	defer span.End()
	req, err := api.DecodeDeploymentRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.eng.Submit(telemetry.WithUserID(ctx, user), req, user, "req-logs")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return d, span.SpanContext().TraceID().String()
}

// asCaller is a context of an API request by user (the server puts the caller there).
func asCaller(user string) context.Context {
	return telemetry.WithUserID(context.Background(), user)
}

// logLine is one decoded JSON log line.
type logLine map[string]any

// name is how the tests name a deployment's log line: "message@cluster".
func (l logLine) name() string {
	return l[telemetry.KeyMessage].(string) + "@" + l[telemetry.KeyCluster].(string)
}

// checkDeploymentLines checks every log line that names deployment d (by deploymentId, or with
// its id in any value: a line that should carry the fields and does not): the design's keys,
// each with the design's JSON type; d's id, operator and version; the trace of the request that
// submitted it; the design's level names and an RFC 3339 UTC timestamp; and as userId the user
// who asked: users[message] for the lines written for another user than the requester, the
// requester otherwise. It returns the lines' names (logLine.name), in order.
func checkDeploymentLines(t *testing.T, logs string, d *store.Deployment, traceID string, users map[string]string) []string {
	t.Helper()
	design := designtest.Load(t, designLogFile)
	var names []string
	for _, l := range deploymentLines(t, logs, d.ID) {
		raw, _ := json.Marshal(l)
		if diff := designtest.Types(design, map[string]any(l)); len(diff) != 0 {
			t.Errorf("not the design's shape (%v): %s", diff, raw)
			continue
		}
		names = append(names, l.name())
		user, ok := users[l[telemetry.KeyMessage].(string)]
		if !ok {
			user = d.RequestedBy
		}
		if l[telemetry.KeyDeploymentID] != d.ID || l[telemetry.KeyOperatorName] != d.OperatorName || l[telemetry.KeyVersion] != d.Version ||
			l[telemetry.KeyUserID] != user || l[telemetry.KeyTraceID] != traceID {
			t.Errorf("not the deployment's values (trace %s, userId %s): %s", traceID, user, raw)
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
	return names
}

// checkEveryDeploymentLine checks all the lines of a run, not only those of one deployment:
// each line that has a deploymentId has the design's nine fields with the design's types.
func checkEveryDeploymentLine(t *testing.T, logs string) {
	t.Helper()
	design := designtest.Load(t, designLogFile)
	n := 0
	for _, l := range jsonLines(t, logs) {
		if _, ok := l[telemetry.KeyDeploymentID]; !ok {
			continue
		}
		n++
		if diff := designtest.Types(design, map[string]any(l)); len(diff) != 0 {
			raw, _ := json.Marshal(l)
			t.Errorf("a line with a deploymentId without the design's fields (%v): %s", diff, raw)
		}
	}
	if n == 0 {
		t.Error("no line has a deploymentId")
	}
}

// hasLines fails the test when one of want is not among names.
func hasLines(t *testing.T, names []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("no line %q among the deployment's: %q", w, names)
		}
	}
}

// TestLogs_DesignFieldsOnEveryLine: a Direct deployment's lines, from the request to
// Completed; the lines of a cluster's step name the cluster, the others have cluster "".
func TestLogs_DesignFieldsOnEveryLine(t *testing.T) {
	h, logs := loggedHarness(t, []target{{Name: "logs-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.operator("logged", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	d, traceID := submitAs(t, h, "admin@example.com", `{"operator": "logged", "version": "1.0.0", "clusters": ["logs-1"], "strategy": "Direct",
		"directConfig": {"parallelClusters": 1, "skipHealthChecks": false}}`)
	h.start()
	h.waitStatus(d.ID, store.DeploymentCompleted)
	h.eng.Stop()

	names := checkDeploymentLines(t, logs.String(), d, traceID, nil)
	hasLines(t, names, "engine: Deployment Deploying@", "engine: cluster.installing@logs-1",
		"engine: cluster.installed@logs-1", "health: Checked@logs-1", "engine: Deployment Completed@")
	checkEveryDeploymentLine(t, logs.String())
}

// TestLogs_CanaryApprovalAndRejection: a Canary over Dev, Staging and Production waits for its
// Production approval, which bob gives: the line of its effect (Deploying) names bob, every other
// line the requester; its stages' lines name their clusters. A second deployment, to Production,
// is rejected by carol: its Failed line names carol.
func TestLogs_CanaryApprovalAndRejection(t *testing.T) {
	h, logs := loggedHarness(t, threeEnvironments(t), nil)
	h.operator("logcan", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.operator("logrej", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	can, canTrace := submitAs(t, h, "admin@example.com", `{"operator": "logcan", "version": "1.0.0",
		"environments": ["Dev", "Staging", "Production"], "strategy": "Canary",
		"canaryConfig": {"initialPercentage": 10, "incrementPercentage": 20, "evaluationPeriod": "PT1S", "successThreshold": 0.95}}`)
	rej, rejTrace := submitAs(t, h, "dave@example.com", `{"operator": "logrej", "version": "1.0.0", "clusters": ["prod-1"], "strategy": "Direct"}`)
	if approvals := h.approveAll(can.ID); len(approvals) != 1 {
		t.Fatalf("approvals %+v, want the Production one", approvals)
	}
	h.wait(rej.ID, "waiting for approval", func(d *store.Deployment) bool { return d.Status == store.DeploymentWaitingApproval })
	list, err := h.store.ApprovalList(context.Background(), &store.ApprovalListParams{DeploymentID: rej.ID, Limit: 10})
	if err != nil || len(list) != 1 {
		t.Fatalf("approvals of the second deployment %v %v", list, err)
	}
	if _, err := h.store.ApprovalDecide(context.Background(), &store.ApprovalDecision{ApprovalID: list[0].ID, Actor: "carol",
		Approve: false, Comment: "not now"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(can.ID, store.DeploymentCompleted)
	h.waitStatus(rej.ID, store.DeploymentFailed)
	h.eng.Stop()

	names := checkDeploymentLines(t, logs.String(), can, canTrace, map[string]string{"engine: Deployment Deploying": "bob"})
	hasLines(t, names, "engine: Deployment WaitingApproval@", "engine: Deployment Deploying@",
		"engine: cluster.installed@dev-1", "engine: cluster.installed@staging-1", "engine: cluster.installed@prod-1",
		"health: Checked@prod-1", "engine: Deployment Completed@")
	names = checkDeploymentLines(t, logs.String(), rej, rejTrace, map[string]string{"engine: Deployment Failed": "carol"})
	hasLines(t, names, "engine: Deployment WaitingApproval@", "engine: Deployment Failed@")
	checkEveryDeploymentLine(t, logs.String())
}

// TestLogs_PauseByAnotherUser: a deployment requested by admin@example.com is paused by olga and
// resumed by otto: the line of the pause taking hold names olga; the others, before and after
// the pause, the requester.
func TestLogs_PauseByAnotherUser(t *testing.T) {
	s := servers(t, 2)
	h, logs := loggedHarness(t, []target{
		{Name: "lp-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "lp-2", Environment: store.EnvironmentDev, Server: s[1]},
	}, nil)
	h.operator("logpause", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d, traceID := submitAs(t, h, "admin@example.com", `{"operator": "logpause", "version": "1.0.0", "clusters": ["lp-1", "lp-2"],
		"strategy": "Direct", "directConfig": {"parallelClusters": 1}}`)
	h.wait(d.ID, "lp-1 installing", func(d *store.Deployment) bool { return clusterByName(d, "lp-1").Status == store.ClusterInstalling })
	if _, err := h.eng.Pause(asCaller("olga"), d.ID, "olga", "change freeze"); err != nil {
		t.Fatal(err)
	}
	h.wait(d.ID, "pause reached", func(d *store.Deployment) bool { return strings.HasPrefix(d.Reason, "paused by olga since ") })
	if _, err := h.eng.Resume(asCaller("otto"), d.ID, "otto"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(d.ID, store.DeploymentCompleted)
	h.eng.Stop()

	names := checkDeploymentLines(t, logs.String(), d, traceID, map[string]string{"engine: Deployment paused": "olga"})
	hasLines(t, names, "engine: cluster.installed@lp-1", "engine: Deployment paused@", "engine: cluster.installed@lp-2",
		"engine: Deployment Completed@")
	if i, j := slices.Index(names, "engine: Deployment paused@"), slices.Index(names, "engine: cluster.installing@lp-2"); i < 0 || j < i {
		t.Errorf("lp-2 started before the pause took hold: %q", names)
	}
	checkEveryDeploymentLine(t, logs.String())
}

// TestLogs_ApprovalExpiry: a Production deployment's approval expires undecided: the expiry's
// line (written by the loop that expires approvals, which knows only the deployment's id) has
// every field, the requester and the request's trace, as has the Failed line that follows.
func TestLogs_ApprovalExpiry(t *testing.T) {
	h, logs := loggedHarness(t, []target{{Name: "lx-prod", Environment: store.EnvironmentProduction, Server: servers(t, 3)[2]}},
		func(c *Config) { c.ApprovalTTL = 2 * time.Second })
	h.operator("logexp", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d, traceID := submitAs(t, h, "admin@example.com", `{"operator": "logexp", "version": "1.0.0", "clusters": ["lx-prod"], "strategy": "Direct"}`)
	d = h.waitStatus(d.ID, store.DeploymentFailed)
	if !strings.Contains(d.Reason, "expired") {
		t.Fatalf("reason %q, want the approval's expiry", d.Reason)
	}
	h.eng.Stop()

	names := checkDeploymentLines(t, logs.String(), d, traceID, nil)
	hasLines(t, names, "engine: Deployment WaitingApproval@", "engine: Approval expired@", "engine: Deployment Failed@")
	checkEveryDeploymentLine(t, logs.String())
}

// TestLogs_FailureRollsBack: a Canary whose pods restart fails its health checks and rolls back
// on its own: the lines of the failure and of the rollback have every field and the requester.
func TestLogs_FailureRollsBack(t *testing.T) {
	h, logs := loggedHarness(t, []target{{Name: "lf-1", Environment: store.EnvironmentDev, Server: servers(t, 4)[3]}}, nil)
	h.operator("logfail", restarting(charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible)))
	h.start()
	d, traceID := submitAs(t, h, "admin@example.com", `{"operator": "logfail", "version": "1.0.0", "clusters": ["lf-1"],
		"strategy": "Canary", "canaryConfig": {"evaluationPeriod": "PT8S", "successThreshold": 1}}`)
	h.waitStatus(d.ID, store.DeploymentRolledBack)
	h.eng.Stop()

	names := checkDeploymentLines(t, logs.String(), d, traceID, nil)
	hasLines(t, names, "engine: cluster.installed@lf-1", "engine: Rolling back@", "engine: Deployment RolledBack@")
	checkEveryDeploymentLine(t, logs.String())
}

// deploymentLines are the JSON log lines that name deployment id: by deploymentId, or with the
// id in any value (a line that should carry the fields and does not).
func deploymentLines(t *testing.T, logs, id string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range jsonLines(t, logs) {
		if raw, _ := json.Marshal(l); strings.Contains(string(raw), id) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no log line names deployment %s:\n%s", id, logs)
	}
	return out
}

// jsonLines decodes every log line; one that is not JSON fails the test.
func jsonLines(t *testing.T, logs string) []logLine {
	t.Helper()
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %s", sc.Bytes())
		}
		out = append(out, l)
	}
	return out
}
