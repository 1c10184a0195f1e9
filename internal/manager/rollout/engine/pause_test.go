package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// pausedHold is how long the tests watch a paused deployment for a step that should not start:
// several engine polls and health checks (HealthInterval is a second in the harness).
const pausedHold = 3 * time.Second

// event is the deployment's first event of type typ on cluster ("" for the deployment's own).
func (h *harness) event(id, typ, cluster string) (int, *store.DeploymentEvent) {
	h.t.Helper()
	evs := h.events(id)
	i, err := eventIndex(evs, typ, cluster)
	if err != nil {
		h.t.Fatalf("deployment %s has no %s event for %q:\n%s", id, typ, cluster, h.eventLog(id))
	}
	return i, evs[i]
}

// replicaOf is the replica an event names in its details.
func replicaOf(t *testing.T, e *store.DeploymentEvent) string {
	t.Helper()
	var d struct{ Replica string }
	if err := json.Unmarshal(e.Details, &d); err != nil {
		t.Fatalf("event %s details %s: %v", e.Type, e.Details, err)
	}
	return d.Replica
}

// notStarted fails the test when one of clusters had an install attempt.
func notStarted(t *testing.T, h *harness, id string, clusters ...string) {
	t.Helper()
	d, err := h.store.DeploymentGetByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range clusters {
		if c := clusterByName(d, name); c.Status != store.ClusterPending || c.InstallAttempts != 0 {
			t.Errorf("paused, %s was started: %+v\nevents:\n%s", name, c, h.eventLog(id))
		}
		if _, err := eventIndex(h.events(id), "cluster.installing", name); err == nil {
			t.Errorf("paused, %s has a cluster.installing event", name)
		}
	}
}

// TestPause_InFlightInstallFinishesNoOtherStarts pauses a Direct deployment (one cluster at a
// time) while its first cluster installs: that install finishes, the other two never start
// while paused (for several polls and health checks), and once resumed the deployment completes.
// A paused deployment cannot be paused again, and a finished one neither paused nor resumed.
func TestPause_InFlightInstallFinishesNoOtherStarts(t *testing.T) {
	s := servers(t, 3)
	h := newHarness(t, []target{
		{Name: "p-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "p-2", Environment: store.EnvironmentDev, Server: s[1]},
		{Name: "p-3", Environment: store.EnvironmentDev, Server: s[2]},
	}, nil)
	h.operator("pause", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	ctx := context.Background()
	d := h.submit(`{"operator": "pause", "version": "1.0.0", "clusters": ["p-1", "p-2", "p-3"], "strategy": "Direct",
		"directConfig": {"parallelClusters": 1}}`)
	h.wait(d.ID, "p-1 installing", func(d *store.Deployment) bool { return clusterByName(d, "p-1").Status == store.ClusterInstalling })
	paused, err := h.eng.Pause(ctx, d.ID, "olga", "change freeze")
	if err != nil {
		t.Fatal(err)
	}
	if paused.PausedAt == nil || paused.PausedBy != "olga" || paused.PauseReason != "change freeze" {
		t.Fatalf("paused deployment %+v", paused)
	}
	h.wait(d.ID, "pause reached", func(d *store.Deployment) bool { return strings.HasPrefix(d.Reason, "paused by olga since ") })

	// The install in flight when the pause came finished; the pause took hold after it.
	pausedAt, _ := h.event(d.ID, "paused", "")
	installed, _ := h.event(d.ID, "cluster.installed", "p-1")
	reached, ev := h.event(d.ID, "pause.reached", "")
	if !(pausedAt < installed && installed < reached) {
		t.Fatalf("events: paused #%d, p-1 installed #%d, pause reached #%d; want the install in flight to finish in between:\n%s",
			pausedAt, installed, reached, h.eventLog(d.ID))
	}
	if !strings.Contains(ev.Message, "2 clusters not started") {
		t.Errorf("pause.reached: %q", ev.Message)
	}
	time.Sleep(pausedHold)
	notStarted(t, h, d.ID, "p-2", "p-3")
	var conflictErr *ConflictError
	if _, err := h.eng.Pause(ctx, d.ID, "otto", ""); !errors.As(err, &conflictErr) || !strings.Contains(err.Error(), "already paused (by olga") {
		t.Errorf("pausing a paused deployment: %v", err)
	}

	if _, err := h.eng.Resume(ctx, d.ID, "otto"); err != nil {
		t.Fatal(err)
	}
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	for _, c := range d.Clusters {
		if c.HelmRevision != 1 || c.InstallAttempts != 1 || c.Status != store.ClusterHealthy {
			t.Errorf("cluster %s: %+v, want installed once", c.ClusterName, c)
		}
	}
	if d.PausedAt != nil || d.PausedBy != "" {
		t.Errorf("completed deployment still paused: %v by %q", d.PausedAt, d.PausedBy)
	}
	if _, ev := h.event(d.ID, "resumed", ""); !strings.Contains(ev.Message, "resumed by otto") {
		t.Errorf("resumed event %q", ev.Message)
	}
	if _, err := h.eng.Pause(ctx, d.ID, "olga", ""); !errors.As(err, &conflictErr) || !strings.Contains(err.Error(), "is Completed") {
		t.Errorf("pausing a finished deployment: %v", err)
	}
	if _, err := h.eng.Resume(ctx, d.ID, "olga"); !errors.As(err, &conflictErr) || !strings.Contains(err.Error(), "nothing to resume") {
		t.Errorf("resuming a finished deployment: %v", err)
	}
}

// TestPause_HeldAcrossReplicas: the replica running a Rolling deployment dies while its first
// cluster installs, and the deployment is paused meanwhile. The replica that takes it over
// finishes that install (the step in flight) and starts nothing more while paused; resumed
// through it, the deployment completes there.
func TestPause_HeldAcrossReplicas(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "r-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "r-2", Environment: store.EnvironmentDev, Server: s[1]},
	}, nil)
	h.operator("replpause", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	ctx := context.Background()
	d := h.submit(`{"operator": "replpause", "version": "1.0.0", "clusters": ["r-1", "r-2"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT0S"}}`)
	h.wait(d.ID, "r-1 installing", func(d *store.Deployment) bool { return clusterByName(d, "r-1").Status == store.ClusterInstalling })
	h.eng.Stop() // replica-a dies: its claim lapses after the lease
	if _, err := h.eng.Pause(ctx, d.ID, "olga", ""); err != nil {
		t.Fatal(err)
	}

	b := h.replica("replica-b")
	h.wait(d.ID, "pause reached", func(d *store.Deployment) bool { return strings.HasPrefix(d.Reason, "paused by olga") })
	_, reached := h.event(d.ID, "pause.reached", "")
	if got := replicaOf(t, reached); got != "replica-b" {
		t.Fatalf("pause reached by %q, want replica-b", got)
	}
	cur, err := h.store.DeploymentGetByID(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c := clusterByName(cur, "r-1"); c.HelmRevision == 0 || c.Status == store.ClusterInstalling || c.Status == store.ClusterPending {
		t.Fatalf("r-1 %+v: the install in flight was not finished", c)
	}
	_, installed := h.event(d.ID, "cluster.installed", "r-1")
	t.Logf("r-1's install in flight finished by %s after %d attempt(s)", replicaOf(t, installed), clusterByName(cur, "r-1").InstallAttempts)
	time.Sleep(pausedHold)
	notStarted(t, h, d.ID, "r-2")

	if _, err := b.Resume(ctx, d.ID, "otto"); err != nil {
		t.Fatal(err)
	}
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	if c := clusterByName(d, "r-2"); c.InstallAttempts != 1 || c.HelmRevision != 1 {
		t.Errorf("r-2 %+v, want installed once after the resume", c)
	}
	if _, ev := h.event(d.ID, "cluster.installing", "r-2"); replicaOf(t, ev) != "replica-b" {
		t.Errorf("r-2 installed by %q, want replica-b", replicaOf(t, ev))
	}
}

// TestPause_HealthRollbackStillRuns: a paused deployment is still watched. Its first cluster
// runs a version whose pods keep restarting (health checks skipped by the request, so the stage
// does not catch it); while paused, three failed checks in a row roll it back, the second
// cluster is never touched, and the rollback ends the pause.
func TestPause_HealthRollbackStillRuns(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "h-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "h-2", Environment: store.EnvironmentDev, Server: s[1]},
	}, nil)
	h.operator("pausebad", restarting(charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible)))
	h.start()
	d := h.submit(`{"operator": "pausebad", "version": "1.0.0", "clusters": ["h-1", "h-2"], "strategy": "Direct",
		"directConfig": {"parallelClusters": 1, "skipHealthChecks": true}}`)
	h.wait(d.ID, "h-1 installing", func(d *store.Deployment) bool { return clusterByName(d, "h-1").Status == store.ClusterInstalling })
	if _, err := h.eng.Pause(context.Background(), d.ID, "olga", "watch it"); err != nil {
		t.Fatal(err)
	}
	d = h.waitStatus(d.ID, store.DeploymentRolledBack)
	if !strings.HasPrefix(d.RollbackReason, "health check while paused: h-1 failed 3 checks in a row") {
		t.Errorf("rollback reason %q", d.RollbackReason)
	}
	if c := clusterByName(d, "h-2"); c.Status != store.ClusterSkipped || c.InstallAttempts != 0 {
		t.Errorf("h-2 %+v, want never touched", c)
	}
	if c := clusterByName(d, "h-1"); c.Status != store.ClusterRolledBack {
		t.Errorf("h-1 %+v, want rolled back", c)
	}
	if d.PausedAt != nil {
		t.Errorf("rolled back and still paused since %v", d.PausedAt)
	}
	reached, _ := h.event(d.ID, "pause.reached", "")
	ended, ev := h.event(d.ID, "resumed", "")
	if ended < reached || !strings.Contains(ev.Message, "a rollback is never paused") {
		t.Errorf("the rollback's end of the pause: #%d %q (pause reached #%d)", ended, ev.Message, reached)
	}
}

// TestPauseStops: where a paused deployment stops. It stops before a stage's installs, before a
// hold begins, before BlueGreen's switch (also one asked for) and before completing; it goes on
// with a hold under way, an install left mid-way, and a switch already made (its monitor).
func TestPauseStops(t *testing.T) {
	now := time.Now()
	plan := &strategy.Plan{Stages: []strategy.Stage{
		{Index: 0, Kind: strategy.StageInstall, Clusters: []string{"a", "b"}},
		{Index: 1, Kind: strategy.StageSwitch, Clusters: []string{"a", "b"}, WaitForSwitch: true},
	}}
	deployment := func(stage int, a, b store.ClusterStatus, mod func(d *store.Deployment)) *store.Deployment {
		d := &store.Deployment{Stage: stage, PausedAt: &now, Clusters: []*store.DeploymentCluster{
			{ClusterName: "a", Status: a}, {ClusterName: "b", Status: b}}}
		if mod != nil {
			mod(d)
		}
		return d
	}
	for _, tc := range []struct {
		name string
		d    *store.Deployment
		want bool
	}{
		{"not paused", deployment(0, store.ClusterPending, store.ClusterPending, func(d *store.Deployment) { d.PausedAt = nil }), false},
		{"before the stage's installs", deployment(0, store.ClusterPending, store.ClusterPending, nil), true},
		{"between two installs of a stage", deployment(0, store.ClusterValidating, store.ClusterPending, nil), true},
		{"an install left mid-way", deployment(0, store.ClusterValidating, store.ClusterInstalling, nil), false},
		{"installs done, hold not begun", deployment(0, store.ClusterValidating, store.ClusterValidating, nil), true},
		{"a hold under way", deployment(0, store.ClusterValidating, store.ClusterValidating, func(d *store.Deployment) { d.StageStartedAt = &now }), false},
		{"waiting for the switch", deployment(1, store.ClusterHealthy, store.ClusterHealthy, nil), true},
		{"a switch asked for", deployment(1, store.ClusterHealthy, store.ClusterHealthy, func(d *store.Deployment) { d.SwitchRequested = true }), true},
		{"switched, monitor not begun", deployment(1, store.ClusterHealthy, store.ClusterHealthy, func(d *store.Deployment) { d.SwitchedAt = &now }), false},
		{"every stage passed", deployment(2, store.ClusterHealthy, store.ClusterHealthy, nil), true},
	} {
		if got := pauseStops(tc.d, plan); got != tc.want {
			t.Errorf("%s: pauseStops %v, want %v", tc.name, got, tc.want)
		}
	}
}
