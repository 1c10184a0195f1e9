package refresh_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/rollout/engine"
	"github.com/slipway-dev/slipway/internal/manager/server"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// rollout is a started deployment engine over st with one Dev cluster, dev-1, of the workload
// fleet (kube-apiserver, controller-manager, scheduler and kwok: Deployments become Available).
// The approval workflow is off in Dev, so an upgrade needs no Admin here.
type rollout struct {
	t        *testing.T
	st       store.Store
	clusters *clusters.Manager
	eng      *engine.Engine
}

func newRollout(t *testing.T, st store.Store, charts *operators.Charts, log *slog.Logger) *rollout {
	t.Helper()
	f := testenv.WorkloadFleet(t, 1)
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := clusters.ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	cm, err := clusters.New(clusters.Config{Store: st, Keyring: keys, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Register(t.Context(), clusters.RegisterParams{Name: "dev-1", Environment: store.EnvironmentDev,
		Kubeconfig: f.Servers[0].Kubeconfig}); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Store: st, Clusters: cm, Charts: charts, Logger: log,
		Checker: health.NewChecker(health.Config{Logger: log}), ReplicaID: "replica-a", Poll: 100 * time.Millisecond,
		Lease: 3 * time.Second, HealthInterval: time.Second, InstallTimeout: 90 * time.Second,
		Policy: approvals.Policy{Disabled: []store.Environment{store.EnvironmentDev}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Stop)
	return &rollout{t: t, st: st, clusters: cm, eng: eng}
}

// deploy deploys version of operator to dev-1 with Direct and waits (90 s at most) for it to end
// Completed.
func (r *rollout) deploy(operator, version string) *store.Deployment {
	r.t.Helper()
	req, err := api.DecodeDeploymentRequest([]byte(`{"operator": "` + operator + `", "version": "` + version + `", "clusters": ["dev-1"], "strategy": "Direct"}`))
	if err != nil {
		r.t.Fatal(err)
	}
	d, err := r.eng.Submit(context.Background(), req, "olga", "req-"+version)
	if err != nil {
		r.t.Fatalf("deploying %s %s: %v", operator, version, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		got, err := r.st.DeploymentGetByID(context.Background(), d.ID)
		if err != nil {
			r.t.Fatal(err)
		}
		switch {
		case got.Status == store.DeploymentCompleted:
			return got
		case got.Status.Terminal():
			r.t.Fatalf("deployment of %s %s ended %s: %s", operator, version, got.Status, got.Reason)
		case time.Now().After(deadline):
			r.t.Fatalf("deployment of %s %s still %s after 90 s", operator, version, got.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLoop_VersionPublishedLaterIsDeployed is the acceptance flow on the real control plane: an
// operator registered with 1.0.0 and deployed; 1.1.0 published afterwards is found by the refresh
// loop (a short interval) and deployed through the engine without registering again; a version
// unpublished then is marked removed and refused by the engine.
func TestLoop_VersionPublishedLaterIsDeployed(t *testing.T) {
	st := replicas(t, "sqlite", 1)[0]
	log := slog.New(slog.DiscardHandler)
	charts, err := operators.New(operators.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := charttest.Versions
	repo := charttest.ServeRepository(t, charttest.OperatorChart("widget-operator", v[0].Version, v[0].Level))
	op := addOperator(t, st, "widgets", repo.URL)
	ref, err := server.NewRefresher(refresh.Config{Store: st, Charts: charts, Logger: log, ReplicaID: "replica-a",
		Interval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Stop)
	waitFor(t, "1.0.0", func() bool { return slices.Equal(versionsOf(t, st, op.ID), []string{v[0].Version}) })

	r := newRollout(t, st, charts, log)
	r.deploy("widgets", v[0].Version)

	repo.Add(t, charttest.OperatorChart("widget-operator", v[1].Version, v[1].Level))
	waitFor(t, "the loop to find "+v[1].Version, func() bool {
		return slices.Equal(versionsOf(t, st, op.ID), []string{v[1].Version, v[0].Version})
	})
	d := r.deploy("widgets", v[1].Version)
	if len(d.Clusters) != 1 || d.Clusters[0].Status != store.ClusterHealthy {
		t.Fatalf("upgrade to %s: %+v", v[1].Version, d.Clusters)
	}

	repo.Remove(t, "widget-operator", v[0].Version)
	waitFor(t, "the loop to mark "+v[0].Version+" removed", func() bool {
		return slices.Equal(versionsOf(t, st, op.ID), []string{v[1].Version})
	})
	req, err := api.DecodeDeploymentRequest([]byte(`{"operator": "widgets", "version": "` + v[0].Version + `", "clusters": ["dev-1"], "strategy": "Direct"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.eng.Submit(t.Context(), req, "olga", "req-removed"); err == nil {
		t.Fatalf("deploying the removed version %s was accepted", v[0].Version)
	}
}
