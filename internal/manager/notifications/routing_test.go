package notifications_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/storetest"
)

func timeNow() time.Time { return time.Now() }

// inTx runs fn in a transaction of the env's store.
func (e *env) inTx(fn func(ctx context.Context, tx store.Tx) error) {
	e.t.Helper()
	if err := store.WithTx(e.ctx, e.store, fn); err != nil {
		e.t.Fatal(err)
	}
}

// deployment is a deployment (not stored) of op to clusters of the given environments.
func deployment(status store.DeploymentStatus, envs ...store.Environment) *store.Deployment {
	d := &store.Deployment{ID: "6f1c2b9e-0a5d-4e47-9a8e-2f4f0c1d7b31", OperatorName: "cert-manager", Version: "1.14.0",
		Strategy: "Direct", Status: status, Reason: "because", RequestedBy: "olga"}
	for i, env := range envs {
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: string(env) + "-" + string(rune('a'+i)), Environment: env, Status: store.ClusterFailed})
	}
	return d
}

// Routes send each event kind of each environment where they say, and transitions are notified
// once: an operator Unhealthy twice is one alert, Degraded changes nothing, Healthy after
// Unhealthy is "recovered"; a deployment status is notified only when it changes to one of the
// four. A notification rolled back with its cause is not stored.
func TestRouting(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", nil)
		rc := newReceiver(t, hmacSecret)
		webhookChannel(t, s, "prod-failures", rc, api.ChannelRoute{Kinds: []string{"deployment.failed", "deployment.rolledBack"}, Environments: []string{"Production"}})
		webhookChannel(t, s, "dev-all", rc, api.ChannelRoute{Environments: []string{"Dev"}})
		webhookChannel(t, s, "health", rc, api.ChannelRoute{Kinds: []string{"operator.unhealthy", "operator.recovered", "cluster.unreachable", "cluster.recovered"}})
		webhookChannel(t, s, "approvals", rc, api.ChannelRoute{Kinds: []string{"deployment.waitingApproval"}},
			api.ChannelRoute{Kinds: []string{"deployment.completed"}, Environments: []string{"Staging"}})
		prod := storetest.Cluster(e.ctx, t, e.store, &storetest.ClusterOpts{Name: "prod-1", Environment: store.EnvironmentProduction})
		dev := storetest.Cluster(e.ctx, t, e.store, &storetest.ClusterOpts{Name: "dev-1", Environment: store.EnvironmentDev})

		deploy := func(from store.DeploymentStatus, d *store.Deployment) {
			e.inTx(func(ctx context.Context, tx store.Tx) error { return s.DeploymentStatus(ctx, tx, from, d) })
		}
		deploy(store.DeploymentDeploying, deployment(store.DeploymentFailed, store.EnvironmentDev, store.EnvironmentProduction))
		deploy(store.DeploymentValidating, deployment(store.DeploymentCompleted, store.EnvironmentDev))
		deploy(store.DeploymentValidating, deployment(store.DeploymentCompleted, store.EnvironmentStaging))
		deploy(store.DeploymentRollingBack, deployment(store.DeploymentRolledBack, store.EnvironmentStaging))
		deploy(store.DeploymentPlanning, deployment(store.DeploymentWaitingApproval, store.EnvironmentProduction))
		deploy(store.DeploymentPlanning, deployment(store.DeploymentDeploying, store.EnvironmentDev))
		deploy(store.DeploymentFailed, deployment(store.DeploymentFailed, store.EnvironmentDev))

		const pastBake = "past its bake window (15m0s after it completed at 2026-11-29T06:00:00Z)"
		healthOf := func(op string, c *store.Cluster, h string, failures int, alert string) {
			rec := &store.OperatorHealth{OperatorName: op, ClusterName: c.Name, DeploymentID: "6f1c2b9e-0a5d-4e47-9a8e-2f4f0c1d7b31",
				Health: h, ConsecutiveFailures: failures, CheckedAt: time.Now().UTC()}
			e.inTx(func(ctx context.Context, tx store.Tx) error {
				return s.OperatorHealth(ctx, tx, rec, "pods Unhealthy: CrashLoopBackOff", alert)
			})
		}
		health := func(c *store.Cluster, h string, failures int) { healthOf("cert-manager", c, h, failures, pastBake) }
		health(prod, "Healthy", 0)
		health(prod, "Unhealthy", 1)
		healthOf("external-dns", prod, "Unhealthy", 1, "") // within its bake window: a rollback follows
		health(prod, "Unhealthy", 2)
		health(prod, "Degraded", 2)
		health(prod, "Healthy", 0)
		health(prod, "Healthy", 0)
		clusterDown(t, e, s, dev, "connection refused")
		clusterDown(t, e, s, dev, "connection refused")
		up := *dev
		up.Health = store.HealthHealthy
		e.inTx(func(ctx context.Context, tx store.Tx) error { return s.ClusterHealth(ctx, tx, &up) })

		errCause := errors.New("the transition failed")
		err := store.WithTx(e.ctx, e.store, func(ctx context.Context, tx store.Tx) error {
			if err := s.DeploymentStatus(ctx, tx, store.DeploymentDeploying, deployment(store.DeploymentFailed, store.EnvironmentProduction)); err != nil {
				return err
			}
			return errCause
		})
		if !errors.Is(err, errCause) {
			t.Fatal(err)
		}

		got := map[string][]string{}
		all := e.deliveries(store.NotificationListParams{})
		slices.Reverse(all)
		for _, n := range all {
			got[n.ChannelName] = append(got[n.ChannelName], n.Kind)
		}
		want := map[string][]string{
			"prod-failures": {"deployment.failed"},
			"dev-all":       {"deployment.failed", "deployment.completed", "cluster.unreachable", "cluster.recovered"},
			"health":        {"operator.unhealthy", "operator.unhealthy", "operator.recovered", "cluster.unreachable", "cluster.recovered"},
			"approvals":     {"deployment.completed", "deployment.waitingApproval"},
		}
		for ch, kinds := range want {
			if !slices.Equal(got[ch], kinds) {
				t.Errorf("channel %s got %v, want %v", ch, got[ch], kinds)
			}
		}
		events := map[string]int{}
		for _, n := range all {
			events[n.EventID]++
		}
		if len(events) != 9 {
			t.Errorf("%d events stored, want 9 (each once, shared by its channels): %v", len(events), events)
		}
		var p notifications.Payload
		unhealthy := e.deliveries(store.NotificationListParams{Kind: "operator.unhealthy"})
		slices.Reverse(unhealthy) // oldest first
		if len(unhealthy) != 2 || json.Unmarshal(unhealthy[0].Payload, &p) != nil || p.Operator == nil ||
			p.Operator.Environment != "Production" || p.Operator.Problems != "pods Unhealthy: CrashLoopBackOff" ||
			p.Operator.OnUnhealthy != "alert" || p.Operator.AlertReason != pastBake ||
			p.Summary != "cert-manager is Unhealthy on prod-1 (Production): pods Unhealthy: CrashLoopBackOff; no automatic rollback: "+pastBake {
			t.Fatalf("operator.unhealthy past the bake window: %d, %s", len(unhealthy), unhealthy[0].Payload)
		}
		p = notifications.Payload{}
		if json.Unmarshal(unhealthy[1].Payload, &p) != nil || p.Operator == nil || p.Operator.OnUnhealthy != "rollback" || p.Operator.AlertReason != "" ||
			p.Summary != "external-dns is Unhealthy on prod-1 (Production): pods Unhealthy: CrashLoopBackOff" {
			t.Errorf("operator.unhealthy within the bake window: %s", unhealthy[1].Payload)
		}
		waiting := e.deliveries(store.NotificationListParams{Kind: "deployment.waitingApproval"})
		if len(waiting) != 1 || json.Unmarshal(waiting[0].Payload, &p) != nil || p.Deployment == nil ||
			p.Deployment.PreviousStatus != "Planning" || p.URL != "https://slipway.example.org/api/v1/deployments/6f1c2b9e-0a5d-4e47-9a8e-2f4f0c1d7b31" {
			t.Errorf("deployment.waitingApproval: %s", waiting[0].Payload)
		}
	})
}
