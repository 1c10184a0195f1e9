package watchview

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// t0 is the fixtures' clock: the deployment was created at t0, frames are drawn after it.
var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
func ptr[T any](v T) *T    { return &v }

// canary is a Canary of widget-operator 1.1.0 over four clusters in three stages, requested
// by alice at t0 and started 2 s later; clusters are set by each case.
func canary(status string, stage int, clusters ...api.DeploymentCluster) *api.Deployment {
	return &api.Deployment{ID: "0b7c6f0e-8d0a-4a8e-9a43-2f1f0c7f9a11", Operator: "widget-operator", Version: "1.1.0",
		Strategy: "Canary", Status: status, Stage: stage, RequestedBy: "alice", CreatedAt: t0, StartedAt: ptr(at(2)),
		Clusters: clusters}
}

func cl(name, env string, stage int, status string, rev int, updated int) api.DeploymentCluster {
	return api.DeploymentCluster{Name: name, Environment: env, Stage: stage, Status: status, HelmRevision: rev,
		InstallAttempts: min(rev, 1), UpdatedAt: at(updated)}
}

// state is a state at now whose clusters began installing at the given seconds.
func state(d *api.Deployment, now int, started map[string]int) *State {
	st := NewState("0b7c6f0e-8d0a-4a8e-9a43-2f1f0c7f9a11")
	st.Deployment, st.Now = d, at(now)
	for name, sec := range started {
		st.Apply(api.DeploymentEvent{ID: int64(len(st.Started) + 1), Type: "cluster.installing", Cluster: name, Time: at(sec)})
	}
	return st
}

// evaluating is the Canary in its second stage's evaluation period: dev-1 healthy, dev-2
// validating, the last stage's two clusters pending, the hold ending at 70 s (its message, read
// at 60 s, says 10 s left; a frame at 66 s says 4).
func evaluating() *State {
	wait := &api.Waiting{Reason: api.WaitEvaluation, Message: "evaluation period, 10 s left", Until: ptr(at(70))}
	d := canary("Deploying", 1,
		cl("dev-1", "Dev", 0, "healthy", 2, 40),
		cl("dev-2", "Dev", 1, "validating", 2, 50),
		cl("staging-1", "Staging", 2, "pending", 0, 2),
		cl("prod-1", "Production", 2, "pending", 0, 2))
	d.Waiting = wait
	d.Clusters[1].Waiting = wait.Message
	d.Clusters[2].Waiting = "waiting for stage 2 (" + wait.Message + ")"
	d.Clusters[3].Waiting = d.Clusters[2].Waiting
	return state(d, 66, map[string]int{"dev-1": 3, "dev-2": 41})
}

func approval() *State {
	d := canary("WaitingApproval", 0,
		cl("dev-1", "Dev", 0, "pending", 0, 0), cl("dev-2", "Dev", 1, "pending", 0, 0),
		cl("staging-1", "Staging", 2, "pending", 0, 0), cl("prod-1", "Production", 2, "pending", 0, 0))
	d.StartedAt = nil
	d.Waiting = &api.Waiting{Reason: api.WaitApproval, Message: "approval by an Admin", Role: "Admin", Until: ptr(at(86400))}
	for i := range d.Clusters {
		d.Clusters[i].Waiting = d.Waiting.Message
	}
	return state(d, 75, nil)
}

func rollingBack() *State {
	d := canary("RollingBack", 0,
		cl("dev-1", "Dev", 0, "failed", 0, 20), cl("dev-2", "Dev", 1, "pending", 0, 2),
		cl("staging-1", "Staging", 2, "pending", 0, 2), cl("prod-1", "Production", 2, "pending", 0, 2))
	d.Clusters[0].InstallAttempts = 2
	d.Clusters[0].Message = `install: Deployment.apps "w" is invalid: spec.replicas: Invalid value: "many"`
	d.Reason = "install failed on dev-1"
	st := state(d, 25, map[string]int{"dev-1": 3})
	st.Apply(api.DeploymentEvent{ID: 8, Type: "cluster.failed", Cluster: "dev-1", Time: at(20)})
	return st
}

func completed() *State {
	d := canary("Completed", 2,
		cl("dev-1", "Dev", 0, "healthy", 2, 40), cl("dev-2", "Dev", 1, "healthy", 2, 80),
		cl("staging-1", "Staging", 2, "healthy", 3, 121), cl("prod-1", "Production", 2, "healthy", 2, 121))
	d.FinishedAt, d.Reason = ptr(at(122)), "every stage passed"
	return state(d, 130, map[string]int{"dev-1": 3, "dev-2": 41, "staging-1": 81, "prod-1": 81})
}

func rolledBack() *State {
	st := rollingBack()
	d := st.Deployment
	d.Status, d.FinishedAt, d.Reason = "RolledBack", ptr(at(31)), "install failed on dev-1: rolled back 1 cluster"
	d.Clusters[0].Status, d.Clusters[0].Message, d.Clusters[0].UpdatedAt = "rolledBack", "back to 1.0.0 (revision 3)", at(31)
	st.Apply(api.DeploymentEvent{ID: 9, Type: "cluster.rolledBack", Cluster: "dev-1", Time: at(30)})
	for i := 1; i < 4; i++ {
		d.Clusters[i].Status = "skipped"
	}
	st.Now = at(40)
	return st
}

// fleet is a Rolling deployment over 12 clusters in 3 stages, the second under way.
func fleet() *State {
	d := canary("Deploying", 1)
	d.Strategy = "Rolling"
	started := map[string]int{}
	for i := range 12 {
		name := fmt.Sprintf("prod-%02d", i+1)
		stage := i / 4
		c := cl(name, "Production", stage, "pending", 0, 2)
		switch {
		case stage == 0:
			c = cl(name, "Production", 0, "healthy", 2, 20+i)
			started[name] = 5 + i
		case stage == 1 && i%4 < 2:
			c = cl(name, "Production", 1, "validating", 2, 40+i)
			started[name] = 30 + i
		case stage == 1:
			c = cl(name, "Production", 1, "installing", 0, 44)
			started[name] = 44
		}
		d.Clusters = append(d.Clusters, c)
	}
	return state(d, 50, started)
}

func TestRender(t *testing.T) {
	reading := NewState("0b7c6f0e-8d0a-4a8e-9a43-2f1f0c7f9a11")
	reading.Stream = "event stream lost (the connection closed before the end); reconnecting in 1s"
	dropped := evaluating()
	dropped.Stream = "event stream lost (the connection closed before the end); resuming after event 42 in 1s"
	interrupted := evaluating()
	interrupted.Interrupted = true
	paused := evaluating()
	paused.Deployment.Paused = true
	paused.Deployment.Waiting = &api.Waiting{Reason: api.WaitPaused, Message: "paused by otto: change freeze"}
	for i := range paused.Deployment.Clusters {
		paused.Deployment.Clusters[i].Waiting = ""
	}
	paused.Deployment.Clusters[2].Waiting, paused.Deployment.Clusters[3].Waiting = "paused by otto: change freeze", "paused by otto: change freeze"
	cases := []struct {
		name  string
		st    *State
		width int
	}{
		{"reading", reading, 100},
		{"approval", approval(), 100},
		{"evaluating", evaluating(), 100},
		{"evaluating-narrow", evaluating(), 44},
		{"dropped", dropped, 100},
		{"paused", paused, 100},
		{"interrupted", interrupted, 100},
		{"rolling-back", rollingBack(), 100},
		{"rolled-back", rolledBack(), 100},
		{"completed", completed(), 100},
		{"fleet", fleet(), 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := Render(tc.st, tc.width)
			for i, l := range lines {
				if w := cells.StringWidth(l); w > tc.width {
					t.Errorf("line %d is %d columns wide, more than %d: %q", i, w, tc.width, l)
				}
			}
			golden(t, filepath.Join("render", tc.name+".golden"), lines)
		})
	}
}

// TestRenderHeight: a frame taller than the terminal shrinks the stages that are done or not
// begun to their bar, then cuts the rows of the stage under way.
func TestRenderHeight(t *testing.T) {
	st := fleet()
	full := Render(st, 100)
	if len(full) != 18 {
		t.Fatalf("the whole fleet frame has %d lines, want 18:\n%s", len(full), strings.Join(full, "\n"))
	}
	if got := RenderHeight(st, 100, 0); len(got) != len(full) {
		t.Errorf("height 0 is no limit: %d lines, want %d", len(got), len(full))
	}
	if got := RenderHeight(st, 100, 40); len(got) != len(full) {
		t.Errorf("a frame that fits is whole: %d lines, want %d", len(got), len(full))
	}
	for _, h := range []int{12, 9} {
		got := RenderHeight(st, 100, h)
		if len(got) > h {
			t.Errorf("height %d: %d lines", h, len(got))
		}
		golden(t, filepath.Join("render", fmt.Sprintf("fleet-height-%d.golden", h)), got)
	}
}

// TestLiveLeft: the time left of a timed wait counts down from the frame's clock, in the
// manager's words.
func TestLiveLeft(t *testing.T) {
	st := evaluating()
	for _, tc := range []struct {
		now  int
		want string
	}{{60, "evaluation period, 10 s left"}, {66, "evaluation period, 4 s left"}, {75, "evaluation period, 0 s left"}} {
		st.Now = at(tc.now)
		if got := st.waitingMessage(); got != tc.want {
			t.Errorf("at %d s: %q, want %q", tc.now, got, tc.want)
		}
		if got, want := st.clusterWaiting(&st.Deployment.Clusters[2]), "waiting for stage 2 ("+tc.want+")"; got != want {
			t.Errorf("at %d s: the pending cluster waits %q, want %q", tc.now, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		3*time.Minute + 10*time.Second: "3 m 10 s", time.Hour + 5*time.Minute: "1 h 5 m", 2 * time.Hour: "2 h",
		4 * time.Minute: "4 m", 40*time.Second + 400*time.Millisecond: "40 s", -time.Second: "0 s",
	} {
		if got := Left(d); got != want {
			t.Errorf("Left(%s) = %q, want %q", d, got, want)
		}
	}
	if got := liveLeft("approval by an Admin", time.Second); got != "approval by an Admin" {
		t.Errorf("a message without a time left changed: %q", got)
	}
}

// TestClusterElapsed: a cluster's time runs from its first install to its stage passing when
// healthy, to its last event when it failed or was rolled back, else to now.
func TestClusterElapsed(t *testing.T) {
	st := completed()
	st.Apply(api.DeploymentEvent{ID: 10, Type: "stage.passed", Time: at(20), Details: []byte(`{"stage":0,"percentage":25}`)})
	st.Apply(api.DeploymentEvent{ID: 11, Type: "cluster.installing", Cluster: "dev-1", Time: at(50)}) // not the first install
	d := st.Deployment
	d.Clusters[1].Status = "failed"
	st.Apply(api.DeploymentEvent{ID: 12, Type: "cluster.failed", Cluster: "dev-2", Time: at(44)})
	d.Clusters[2].Status = "validating"
	d.FinishedAt = nil
	for i, want := range []string{"17s", "3s", "49s", "40s"} {
		if got := clusterElapsedCell(st, &d.Clusters[i]); got != want {
			t.Errorf("%s (%s): %s, want %s", d.Clusters[i].Name, d.Clusters[i].Status, got, want)
		}
	}
	if got := clusterElapsedCell(NewStateWith(d, at(60)), &d.Clusters[0]); got != "-" {
		t.Errorf("a cluster whose install was not seen: %s, want -", got)
	}
}

func NewStateWith(d *api.Deployment, now time.Time) *State {
	st := NewState(d.ID)
	st.Deployment, st.Now = d, now
	return st
}

func TestElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 8*time.Second + 900*time.Millisecond: "8s", 72 * time.Second: "1m12s",
		time.Hour + 2*time.Minute + 59*time.Second: "1h02m", -time.Second: "0s",
	} {
		if got := Elapsed(d); got != want {
			t.Errorf("Elapsed(%s) = %q, want %q", d, got, want)
		}
	}
}

// golden compares lines with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, lines []string) {
	t.Helper()
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run go test with -update to accept):\n--- want\n%s--- got\n%s", path, want, got)
	}
}
