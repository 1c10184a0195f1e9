package engine

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// chartName is the test operator's chart; its Deployment is <release>-widget-operator.
const chartName = "widget-operator"

// server is a cluster the tests deploy to: its admin kubeconfig.
type server struct {
	Kubeconfig []byte
	Config     *rest.Config
}

// harness is one engine over a fresh SQLite store, with clusters registered and a chart repository.
type harness struct {
	t        testing.TB
	store    *sqlitestore.Store
	clusters *clusters.Manager
	repo     *charttest.Repository
	eng      *Engine
	cfg      Config
	logs     *testenv.SyncBuffer
	admin    map[string]*rest.Config // admin access by cluster name, for assertions
}

// target is a cluster to register: a fleet server under a name in an environment.
type target struct {
	Name        string
	Environment store.Environment
	Server      server
}

// newHarness registers targets and builds (without starting) an engine; mod adjusts its config.
func newHarness(t testing.TB, targets []target, mod func(*Config)) *harness {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "manager.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := clusters.ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: st, logs: &testenv.SyncBuffer{}, admin: map[string]*rest.Config{}}
	log := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.clusters, err = clusters.New(clusters.Config{Store: st, Keyring: keys, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if _, err := h.clusters.Register(ctx, clusters.RegisterParams{Name: tg.Name, Environment: tg.Environment, Kubeconfig: tg.Server.Kubeconfig}); err != nil {
			t.Fatalf("registering %s: %v", tg.Name, err)
		}
		h.admin[tg.Name] = tg.Server.Config
	}
	charts, err := operators.New(operators.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.repo = charttest.ServeRepository(t)
	h.cfg = Config{
		Store: st, Clusters: h.clusters, Charts: charts, Logger: log,
		Checker:        health.NewChecker(health.Config{Logger: log}),
		ReplicaID:      "replica-a",
		Poll:           100 * time.Millisecond,
		Lease:          3 * time.Second,
		HealthInterval: time.Second,
		InstallTimeout: 90 * time.Second,
		SwitchMonitor:  2 * time.Second,
		HealthLoop:     true,
		// The rollout tests upgrade patch versions (1.0.0 → 1.0.1) and test what follows, not
		// the approval of each upgrade (the default, patch): they ask one from minor up. The
		// approval tests (approvals_test.go) set the default policy.
		Policy: approvals.Policy{UpgradeLevel: approvals.LevelMinor},
	}
	if mod != nil {
		mod(&h.cfg)
	}
	h.eng, err = New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.eng.Stop()
		if t.Failed() {
			t.Logf("engine logs:\n%s", tail(h.logs.String(), 60))
		}
	})
	return h
}

// start runs the engine until the test ends.
func (h *harness) start() {
	h.t.Helper()
	if err := h.eng.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// replica starts a second engine, named id, over the harness's store and clusters (another
// replica taking over), stopped when the test ends.
func (h *harness) replica(id string) *Engine {
	h.t.Helper()
	cfg := h.cfg
	cfg.ReplicaID = id
	e, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(e.Stop)
	return e
}

// operator registers an operator whose chart versions are published in the harness's repository.
func (h *harness) operator(name string, versions ...charttest.ChartFiles) *store.Operator {
	h.t.Helper()
	ctx := context.Background()
	op, err := h.store.OperatorCreate(ctx, &store.OperatorCreateParams{
		ID: uuid.NewString(), Name: name, Namespace: "op-" + name, ChartRepository: h.repo.URL, ChartName: chartName, Now: time.Now(),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, files := range versions {
		h.repo.Add(h.t, files)
		v := chartVersion(files)
		if _, err := h.store.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: v, Now: time.Now()}); err != nil {
			h.t.Fatal(err)
		}
	}
	return op
}

// chartVersion reads the version line of a chart's Chart.yaml.
func chartVersion(files charttest.ChartFiles) string {
	for _, line := range strings.Split(files["Chart.yaml"], "\n") {
		if v, ok := strings.CutPrefix(line, "version: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// submit posts a deployment request (the design's JSON) as alice.
func (h *harness) submit(body string) *store.Deployment {
	h.t.Helper()
	req, err := api.DecodeDeploymentRequest([]byte(body))
	if err != nil {
		h.t.Fatal(err)
	}
	d, err := h.eng.Submit(context.Background(), req, "alice", "req-1")
	if err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	return d
}

// wait polls the deployment until cond holds (90 seconds at most), and returns it.
func (h *harness) wait(id, what string, cond func(d *store.Deployment) bool) *store.Deployment {
	h.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		d, err := h.store.DeploymentGetByID(context.Background(), id)
		if err != nil {
			h.t.Fatal(err)
		}
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			h.t.Logf("claimed by %q until %v, due %v; engine goroutines:\n%s", d.ClaimedBy, d.LeaseUntil, d.NextRunAt, engineStacks())
			h.t.Fatalf("deployment %s: %s not reached; status %s (%s)\nevents:\n%s", id, what, d.Status, d.Reason, h.eventLog(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStatus waits until the deployment reaches status; another terminal status fails the test.
func (h *harness) waitStatus(id string, status store.DeploymentStatus) *store.Deployment {
	h.t.Helper()
	d := h.wait(id, string(status), func(d *store.Deployment) bool { return d.Status == status || d.Status.Terminal() })
	if d.Status != status {
		h.t.Fatalf("deployment %s ended %s (%s), want %s\nevents:\n%s", id, d.Status, d.Reason, status, h.eventLog(id))
	}
	return d
}

func (h *harness) events(id string) []*store.DeploymentEvent {
	h.t.Helper()
	evs, err := h.store.DeploymentEventList(context.Background(), &store.DeploymentEventListParams{DeploymentID: id, Limit: 1000})
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

func (h *harness) eventLog(id string) string {
	var b strings.Builder
	for _, e := range h.events(id) {
		fmt.Fprintf(&b, "  %s %-22s %-10s %s\n", e.At.Format("15:04:05.000"), e.Type, e.Cluster, e.Message)
	}
	return b.String()
}

// eventTypes are the deployment's event types, in order.
func (h *harness) eventTypes(id string) []string {
	var out []string
	for _, e := range h.events(id) {
		out = append(out, e.Type)
	}
	return out
}

// engineStacks are the stacks of the goroutines running engine code (to see where a step waits).
func engineStacks() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "rollout/engine.(*Engine)") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
