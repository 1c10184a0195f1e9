package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

func TestLeft(t *testing.T) {
	for d, want := range map[time.Duration]string{
		3*time.Minute + 10*time.Second: "3 m 10 s", 3 * time.Minute: "3 m", 40 * time.Second: "40 s",
		time.Hour + 5*time.Minute + 9*time.Second: "1 h 5 m", 2 * time.Hour: "2 h", -time.Second: "0 s", 1400 * time.Millisecond: "1 s",
	} {
		if got := left(d); got != want {
			t.Errorf("left(%s) = %q, want %q", d, got, want)
		}
	}
}

func storedDeployment(strategy, config string, clusters ...*store.DeploymentCluster) *store.Deployment {
	return &store.Deployment{ID: "d1", OperatorID: "op-1", OperatorName: "widgets", Version: "1.1.0", Strategy: strategy, Config: json.RawMessage(config),
		Status: store.DeploymentDeploying, Clusters: clusters}
}

func dc(name string, env store.Environment, stage int, status store.ClusterStatus) *store.DeploymentCluster {
	return &store.DeploymentCluster{ClusterName: name, Environment: env, Stage: stage, Status: status}
}

// The reasons a plan gives, from stored deployments as the engine leaves them.
func TestWaitingFromThePlan(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	wc := &waitContext{now: now, namespaces: map[string]string{"op-1": "widgets"}}
	started := now.Add(-110 * time.Second)

	canary := storedDeployment("Canary", `{"evaluationPeriod": "PT5M", "stages": [50, 100]}`,
		dc("dev-1", store.EnvironmentDev, 0, store.ClusterValidating), dc("dev-2", store.EnvironmentDev, 1, store.ClusterPending))
	canary.StageStartedAt = &started
	w, clusters := wc.of(canary)
	if w == nil || w.Reason != api.WaitEvaluation || w.Message != "evaluation period, 3 m 10 s left" || !w.Until.Equal(started.Add(5*time.Minute)) {
		t.Fatalf("canary hold: %+v", w)
	}
	if clusters["dev-1"] != "evaluation period, 3 m 10 s left" || clusters["dev-2"] != "waiting for stage 1 (evaluation period, 3 m 10 s left)" {
		t.Fatalf("canary clusters: %v", clusters)
	}
	canary.StageStartedAt = new(now.Add(-6 * time.Minute))
	if w, _ := wc.of(canary); w != nil {
		t.Fatalf("a hold that ended (the stage is being judged): %+v", w)
	}

	rolling := storedDeployment("Rolling", `{"validationPeriod": "PT1M", "pauseBetweenClusters": "PT2M"}`,
		dc("dev-1", store.EnvironmentDev, 0, store.ClusterHealthy), dc("dev-2", store.EnvironmentDev, 1, store.ClusterPending))
	rolling.Stage, rolling.NextRunAt = 1, new(now.Add(75*time.Second))
	if w, clusters := wc.of(rolling); w == nil || w.Reason != api.WaitPause || w.Message != "pause between clusters, 1 m 15 s left" || clusters["dev-2"] != w.Message || clusters["dev-1"] != "" {
		t.Fatalf("rolling pause: %+v %v", w, clusters)
	}
	rolling.StageStartedAt = new(now.Add(-20 * time.Second))
	rolling.Clusters[1].Status = store.ClusterValidating
	if w, _ := wc.of(rolling); w == nil || w.Reason != api.WaitEvaluation || w.Message != "validation period, 40 s left" {
		t.Fatalf("rolling hold: %+v", w)
	}

	bg := storedDeployment("BlueGreen", `{"autoSwitch": false, "validationPeriod": "PT1M"}`,
		dc("dev-1", store.EnvironmentDev, 0, store.ClusterHealthy), dc("prod-1", store.EnvironmentProduction, 1, store.ClusterHealthy))
	bg.Clusters[0].BlueNamespace, bg.Clusters[1].BlueNamespace = "widgets", "widgets"
	bg.Stage = 2
	if w, clusters := wc.of(bg); w == nil || w.Reason != api.WaitSwitch || !strings.HasPrefix(w.Message, "switch to green") || clusters["prod-1"] != "switch to green" {
		t.Fatalf("blue-green: %+v %v", w, clusters)
	}
	bg.SwitchRequested = true
	if w, _ := wc.of(bg); w != nil {
		t.Fatalf("switch asked: %+v", w)
	}
	bg.SwitchRequested, bg.SwitchedAt, bg.StageStartedAt = false, new(now.Add(-time.Minute)), new(now.Add(-time.Minute))
	if w, _ := wc.of(bg); w == nil || w.Message != "monitoring after the switch, 4 m left" {
		t.Fatalf("after the switch: %+v", w)
	}

	bg.PausedAt, bg.PausedBy, bg.PauseReason = new(now), "alice", "change freeze"
	if w, _ := wc.of(bg); w == nil || w.Reason != api.WaitPaused || w.Message != "paused by alice: change freeze" {
		t.Fatalf("paused: %+v", w)
	}
	bg.Status = store.DeploymentCompleted
	if w, clusters := wc.of(bg); w != nil || len(clusters) != 0 {
		t.Fatalf("completed: %+v %v", w, clusters)
	}
}

// TestWaitingPlansAsTheEngine: the waiting reason re-plans a deployment with the engine's plan
// options and the operator's namespace from the store, as the engine's steps do
// (strategy.PlanOf): holds scaled as the engine scales them, and a BlueGreen whose blue runs
// outside the operator's namespace, with greenNamespace set to blue's, still waits for its
// switch (planned from where blue runs, green would be blue).
func TestWaitingPlansAsTheEngine(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	wc := &waitContext{now: now, plan: strategy.Options{HoldScale: 0.5}, namespaces: map[string]string{"op-1": "ops"}}
	rolling := storedDeployment("Rolling", `{"validationPeriod": "PT1M"}`,
		dc("dev-1", store.EnvironmentDev, 0, store.ClusterValidating), dc("dev-2", store.EnvironmentDev, 1, store.ClusterPending))
	rolling.StageStartedAt = new(now.Add(-20 * time.Second))
	if w, _ := wc.of(rolling); w == nil || w.Reason != api.WaitEvaluation || w.Message != "validation period, 10 s left" {
		t.Fatalf("rolling hold, scaled by half: %+v", w)
	}

	bg := storedDeployment("BlueGreen", `{"greenNamespace": "legacy", "autoSwitch": false}`,
		dc("dev-1", store.EnvironmentDev, 0, store.ClusterHealthy))
	bg.Clusters[0].BlueNamespace, bg.Clusters[0].Namespace = "legacy", "ops"
	bg.Stage = 1
	if w, _ := wc.of(bg); w == nil || w.Reason != api.WaitSwitch {
		t.Fatalf("blue-green outside the operator's namespace: %+v", w)
	}
}

func TestApprovalWait(t *testing.T) {
	expires := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	w := approvalWait([]*store.Approval{
		{RequiredRole: "EnvironmentOwner:Production", Required: 2, ExpiresAt: expires.Add(time.Hour), CreatedAt: expires.Add(-time.Hour),
			Decisions: []*store.ApprovalDecision{{Actor: "pat", Approve: true}}},
		{RequiredRole: "Admin", Required: 1, ExpiresAt: expires, CreatedAt: expires.Add(-2 * time.Hour)},
	})
	if w.Reason != api.WaitApproval || w.Role != "Admin" || !w.Until.Equal(expires) ||
		w.Message != "approval by an Admin and by 2 EnvironmentOwners of Production (or an Admin) (1 of 2 given)" {
		t.Fatalf("approvals: %+v", w)
	}
	if approvalWait(nil) != nil {
		t.Fatal("no pending approval: waiting")
	}
}

// TestWaitingThroughTheAPI: GET and list answer what each deployment waits for, with one
// approvals read and one queue read for the whole page (the stored deployments as the engine
// leaves them: queued behind others, waiting for an approval).
func TestWaitingThroughTheAPI(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine)
		b.fleetOf()
		b.addOperator("wait-op", "wait-system", "1.0.0")
		b.addOperator("wait-two", "wait-two", "1.0.0")
		olga := b.token("olga", auth.Operator)
		submit := func(op, cluster string) api.Deployment {
			r := b.do("POST", "/api/v1/deployments", olga, `{"operator": "`+op+`", "version": "1.0.0", "clusters": ["`+cluster+`"], "strategy": "Direct"}`)
			expect(t, "submit", r, http.StatusAccepted)
			var d api.Deployment
			r.json(t, &d)
			return d
		}
		running, first, second := submit("wait-op", "dev-1"), submit("wait-op", "dev-2"), submit("wait-two", "dev-1")
		b.setStatus(running.ID, store.DeploymentDeploying, nil)
		b.setStatus(first.ID, store.DeploymentQueued, nil)
		b.setStatus(second.ID, store.DeploymentQueued, nil)
		prod := submit("wait-two", "prod-1")
		b.setStatus(prod.ID, store.DeploymentWaitingApproval, nil)
		b.addApproval(prod.ID, "production", "EnvironmentOwner:Production", 1, time.Now().Add(time.Hour))

		var got api.Deployment
		b.do("GET", "/api/v1/deployments/"+second.ID, b.viewer(), nil).json(t, &got)
		if got.Waiting == nil || got.Waiting.Reason != api.WaitQueued || got.Waiting.Message != "queued behind 2 deployments (1 running, 1 queued before it)" ||
			got.Clusters[0].Waiting != got.Waiting.Message {
			t.Fatalf("second queued: %+v", got.Waiting)
		}
		list := b.listDeployments(t, "")
		byID := map[string]api.Deployment{}
		for _, d := range list.Items {
			byID[d.ID] = d
		}
		if w := byID[first.ID].Waiting; w == nil || w.Message != "queued behind 1 deployment (1 running, 0 queued before it)" {
			t.Fatalf("first queued in the list: %+v", w)
		}
		if w := byID[prod.ID].Waiting; w == nil || w.Reason != api.WaitApproval || w.Role != "EnvironmentOwner:Production" ||
			w.Message != "approval by an EnvironmentOwner of Production (or an Admin)" || w.Until == nil || byID[prod.ID].Clusters[0].Waiting != w.Message {
			t.Fatalf("waiting for approval in the list: %+v", w)
		}
		if w := byID[running.ID].Waiting; w != nil {
			t.Fatalf("installing (no hold yet): %+v", w)
		}
		r := b.do("POST", "/api/v1/deployments/"+running.ID+"/pause", olga, api.PauseRequest{Reason: "lunch"})
		expect(t, "pause", r, http.StatusAccepted)
		if r.json(t, &got); got.Waiting == nil || got.Waiting.Reason != api.WaitPaused || got.Waiting.Message != "paused by olga: lunch" {
			t.Fatalf("the pause's answer: %+v", got.Waiting)
		}
	})
}
