//go:build e2e

package realnodetest

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/rollout/engine"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The manager's settings for the suite: checks every second, 3 Unhealthy checks in a row roll
// back (the default threshold), installs and rollbacks wait for readiness up to 25 s (a good
// version is ready within 3 s; a version that never is fails its install after that long).
const (
	healthInterval = time.Second
	installTimeout = 25 * time.Second
	// switchMonitor is how long BlueGreen watches green after the switch (the design's 5 minutes).
	switchMonitor = 10 * time.Second
	// failAfter is when a broken version fails after its start: late enough for the install's
	// readiness wait to see its pod Ready, as a real operator that breaks once running.
	failAfter = 6 * time.Second
)

// manager is an in-process operator manager wired as `manager serve` wires it: a SQLite store,
// the clusters registered through clusters.Manager (kubeconfig encrypted), a chart repository
// over HTTP, the rollout engine with its health loop and the health checker.
type manager struct {
	t        *testing.T
	store    *sqlitestore.Store
	clusters *clusters.Manager
	eng      *engine.Engine
	repo     *charttest.Repository
	logs     *testenv.SyncBuffer
}

// newManager starts a manager with cluster registered from w's control plane; it stops with t.
func newManager(t *testing.T, w *world, cluster string) *manager {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "manager.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	m := &manager{t: t, store: st, logs: &testenv.SyncBuffer{}}
	log := slog.New(slog.NewJSONHandler(m.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := clusters.ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := clusters.New(clusters.Config{Store: st, Keyring: keys, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	m.clusters = cl
	m.register(cluster, store.EnvironmentDev, w)
	charts, err := operators.New(operators.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.repo = charttest.ServeRepository(t)
	m.eng, err = engine.New(engine.Config{
		Store: st, Clusters: cl, Charts: charts, Logger: log,
		Checker:        health.NewChecker(health.Config{Logger: log}),
		ReplicaID:      "replica-a",
		Poll:           100 * time.Millisecond,
		Lease:          5 * time.Second,
		HealthInterval: healthInterval,
		InstallTimeout: installTimeout,
		SwitchMonitor:  switchMonitor,
		HealthLoop:     true,
		// Patch upgrades (1.0.0 → 1.0.x) need no approval: the suite tests health, not approvals.
		Policy: approvals.Policy{UpgradeLevel: approvals.LevelMinor},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.eng.Stop()
		if t.Failed() {
			t.Logf("manager logs (last lines):\n%s", tail(m.logs.String(), 40))
		}
	})
	return m
}

// register registers w's control plane as the cluster name in env.
func (m *manager) register(name string, env store.Environment, w *world) {
	m.t.Helper()
	if _, err := m.clusters.Register(context.Background(), clusters.RegisterParams{Name: name, Environment: env, Kubeconfig: w.kubeconfig}); err != nil {
		m.t.Fatalf("registering %s: %v", name, err)
	}
}

// operator registers operator (namespace namespace) with the chart versions, published in the
// manager's repository.
func (m *manager) operator(name, namespace string, versions ...charttest.ChartFiles) {
	m.t.Helper()
	ctx := context.Background()
	op, err := m.store.OperatorCreate(ctx, &store.OperatorCreateParams{ID: uuid.NewString(), Name: name, Namespace: namespace,
		ChartRepository: m.repo.URL, ChartName: chartName, Now: time.Now()})
	if err != nil {
		m.t.Fatal(err)
	}
	for _, files := range versions {
		m.repo.Add(m.t, files)
		v := strings.TrimSpace(strings.SplitN(strings.SplitN(files["Chart.yaml"], "version: ", 2)[1], "\n", 2)[0])
		if _, err := m.store.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: v, Now: time.Now()}); err != nil {
			m.t.Fatal(err)
		}
	}
}

// deploy submits a deployment request (the API's JSON) as alice.
func (m *manager) deploy(body string) *store.Deployment {
	m.t.Helper()
	req, err := api.DecodeDeploymentRequest([]byte(body))
	if err != nil {
		m.t.Fatal(err)
	}
	d, err := m.eng.Submit(context.Background(), req, "alice", "req-"+uuid.NewString()[:8])
	if err != nil {
		m.t.Fatalf("submit: %v", err)
	}
	return d
}

// waitStatus waits (within limit) until the deployment ends; it must end with status.
func (m *manager) waitStatus(id string, status store.DeploymentStatus, limit time.Duration) *store.Deployment {
	m.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		d, err := m.store.DeploymentGetByID(context.Background(), id)
		if err != nil {
			m.t.Fatal(err)
		}
		if d.Status.Terminal() || time.Now().After(deadline) {
			if d.Status != status {
				m.t.Fatalf("deployment %s is %s (%s), want %s\nevents:\n%s", id, d.Status, d.Reason, status, m.eventLog(id))
			}
			return d
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitUntil waits (within limit) until the deployment's status is want, whatever it passes
// through (a Completed deployment the health loop rolls back, say).
func (m *manager) waitUntil(id string, want store.DeploymentStatus, limit time.Duration) *store.Deployment {
	m.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		d, err := m.store.DeploymentGetByID(context.Background(), id)
		if err != nil {
			m.t.Fatal(err)
		}
		if d.Status == want {
			return d
		}
		if time.Now().After(deadline) || (d.Status.Terminal() && d.Status != store.DeploymentCompleted) {
			m.t.Fatalf("deployment %s is %s (%s), want %s\nevents:\n%s", id, d.Status, d.Reason, want, m.eventLog(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *manager) events(id string) []*store.DeploymentEvent {
	m.t.Helper()
	evs, err := m.store.DeploymentEventList(context.Background(), &store.DeploymentEventListParams{DeploymentID: id, Limit: 1000})
	if err != nil {
		m.t.Fatal(err)
	}
	return evs
}

func (m *manager) eventLog(id string) string {
	var b strings.Builder
	for _, e := range m.events(id) {
		fmt.Fprintf(&b, "  %s %-22s %-8s %s\n", e.At.Format("15:04:05.000"), e.Type, e.Cluster, e.Message)
	}
	return b.String()
}

// firstEvent is the deployment's first event of type typ (nil when there is none).
func (m *manager) firstEvent(id, typ string) *store.DeploymentEvent {
	for _, e := range m.events(id) {
		if e.Type == typ {
			return e
		}
	}
	return nil
}

// lastCheck is the health loop's latest stored check of operator (nil before the first).
func (m *manager) lastCheck(operator string) (*store.OperatorHealth, api.OperatorHealthCheck) {
	recs, err := m.store.OperatorHealthList(context.Background(), &store.OperatorHealthListParams{OperatorName: operator})
	if err != nil || len(recs) == 0 {
		return nil, api.OperatorHealthCheck{}
	}
	res, err := health.DecodeResult(recs[0].Result)
	if err != nil {
		m.t.Fatalf("the stored check: %v", err)
	}
	return recs[0], res
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
