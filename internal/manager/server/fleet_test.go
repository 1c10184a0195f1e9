package server

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
	rolloutengine "github.com/slipway-dev/slipway/internal/manager/rollout/engine"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
)

// seedCluster registers a cluster in the store directly with its own health.
func seedCluster(tb testing.TB, st store.Executor, name string, env store.Environment, h store.Health, reason string) {
	tb.Helper()
	at := time.Now().UTC().Truncate(time.Second)
	if _, err := st.ClusterCreate(context.Background(), &store.ClusterCreateParams{ID: uuid.NewString(), Name: name, Environment: env,
		KubernetesVersion: "v1.37.1", Health: h, HealthReason: reason, HealthCheckedAt: &at, KubeconfigCiphertext: []byte("sealed"),
		KeyID: "test", Now: time.Now()}); err != nil {
		tb.Fatal(err)
	}
}

// seedLive records a Completed deployment of op's version on clusters (name → environment), as
// the engine leaves one: where the version runs.
func seedLive(tb testing.TB, st store.Executor, op *store.Operator, version string, clusters map[string]store.Environment) string {
	tb.Helper()
	return seedLiveAt(tb, st, op, version, clusters, time.Now().UTC())
}

// seedLiveAt is seedLive of a deployment that completed at finished.
func seedLiveAt(tb testing.TB, st store.Executor, op *store.Operator, version string, clusters map[string]store.Environment, finished time.Time) string {
	tb.Helper()
	d := &store.Deployment{OperatorID: op.ID, OperatorName: op.Name, Version: version, Strategy: "Direct",
		Status: store.DeploymentCompleted, Reason: "completed", RequestedBy: "setup", CreatedAt: finished.Add(-time.Minute), FinishedAt: &finished,
		BakeWindow: 15 * time.Minute}
	for name, env := range clusters {
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: name, Environment: env,
			Status: store.ClusterHealthy, HelmRevision: 2, Namespace: op.Namespace, Release: op.Name})
	}
	out, err := st.DeploymentCreate(context.Background(), d)
	if err != nil {
		tb.Fatal(err)
	}
	return out.ID
}

func seedHealth(tb testing.TB, st store.Executor, op, cluster, deployment string, h api.HealthState, podsMsg string) {
	tb.Helper()
	res := api.OperatorHealthCheck{ClusterName: cluster, Health: h, Pods: api.PodsStatus{Health: h}, Webhooks: api.WebhooksStatus{Health: api.Healthy},
		CRDs: api.ReconciliationStatus{Health: api.Healthy}}
	if podsMsg != "" {
		res.Pods.Messages = []string{podsMsg}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.OperatorHealthRecord(context.Background(), &store.OperatorHealthRecordParams{OperatorName: op, ClusterName: cluster,
		DeploymentID: deployment, Health: string(h), Result: raw, CheckedAt: time.Now()}); err != nil {
		tb.Fatal(err)
	}
}

func cellKeys(cells []api.FleetCell) string {
	var out []string
	for _, c := range cells {
		out = append(out, c.Operator+"@"+c.Cluster)
	}
	return strings.Join(out, " ")
}

// TestFleet: operators × clusters in one answer: clusters by environment then name, a cell only
// where an operator runs, its version's drift from the operator's latest, its health (Unknown
// before a check; what failed when it is not healthy), and the environment filter.
func TestFleet(t *testing.T) {
	forEngine(t, testFleet)
}

func testFleet(t *testing.T, engine string) {
	b := setup(t, engine)
	seedCluster(t, b.store, "prod-1", store.EnvironmentProduction, store.HealthUnhealthy, "connecting: connection refused")
	seedCluster(t, b.store, "stage-1", store.EnvironmentStaging, store.HealthHealthy, "")
	seedCluster(t, b.store, "dev-b", store.EnvironmentDev, store.HealthHealthy, "")
	seedCluster(t, b.store, "dev-a", store.EnvironmentDev, store.HealthHealthy, "")
	widgets := b.addOperator("widgets", "widget-system", "1.0.0", "1.2.0", "1.10.0")
	gadgets := b.addOperator("gadgets", "gadget-system", "2.0.0")
	b.addOperator("idle", "idle-system", "3.0.0")
	current := seedLive(t, b.store, widgets, "1.10.0", map[string]store.Environment{"dev-a": store.EnvironmentDev})
	old := seedLive(t, b.store, widgets, "1.2.0", map[string]store.Environment{"stage-1": store.EnvironmentStaging, "prod-1": store.EnvironmentProduction})
	completed := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	seedLiveAt(t, b.store, gadgets, "2.0.0", map[string]store.Environment{"dev-b": store.EnvironmentDev}, completed)
	seedHealth(t, b.store, "widgets", "dev-a", current, api.Healthy, "")
	seedHealth(t, b.store, "widgets", "prod-1", old, api.Unhealthy, "0 of 1 controller pods ready: CrashLoopBackOff")

	var f api.Fleet
	r := b.do("GET", "/api/v1/fleet", b.viewer(), nil)
	expect(t, "fleet", r, http.StatusOK)
	r.json(t, &f)
	if len(f.Operators) != 3 || f.Operators[0].Name != "gadgets" || f.Operators[2].Name != "widgets" ||
		f.Operators[2].LatestVersion != "1.10.0" || strings.Join(f.Operators[2].Versions, ",") != "1.10.0,1.2.0,1.0.0" || f.Operators[1].Namespace != "idle-system" {
		t.Fatalf("operators: %+v", f.Operators)
	}
	var order []string
	for _, c := range f.Clusters {
		order = append(order, c.Name)
	}
	if strings.Join(order, " ") != "dev-a dev-b stage-1 prod-1" || f.Clusters[3].Health != "Unhealthy" ||
		f.Clusters[3].HealthReason != "connecting: connection refused" || f.Clusters[0].KubernetesVersion != "v1.37.1" || f.Clusters[0].LastChecked == nil {
		t.Fatalf("clusters: %+v", f.Clusters)
	}
	if got := cellKeys(f.Cells); got != "gadgets@dev-b widgets@dev-a widgets@stage-1 widgets@prod-1" {
		t.Fatalf("cells: %s", got)
	}
	gd, wa, ws, wp := f.Cells[0], f.Cells[1], f.Cells[2], f.Cells[3]
	if wa.Version != "1.10.0" || wa.Drift != "current" || wa.Health != "Healthy" || wa.HealthReason != "" || wa.CheckedAt == nil ||
		wa.DeploymentID != current || wa.HelmRevision != 2 || wa.Environment != "Dev" || wa.LatestVersion != "1.10.0" {
		t.Errorf("widgets on dev-a: %+v", wa)
	}
	if ws.Version != "1.2.0" || ws.Drift != "behind" || ws.Health != "Unknown" || ws.CheckedAt != nil || ws.Environment != "Staging" {
		t.Errorf("widgets on stage-1: %+v", ws)
	}
	if wp.Drift != "behind" || wp.Health != "Unhealthy" || !strings.Contains(wp.HealthReason, "pods Unhealthy: 0 of 1 controller pods ready") {
		t.Errorf("widgets on prod-1: %+v", wp)
	}
	if gd.Drift != "current" || gd.Health != "Unknown" {
		t.Errorf("gadgets on dev-b: %+v", gd)
	}
	// Failed checks roll back within the bake window (15 minutes after completion), alert after it.
	if wp.OnUnhealthy != "rollback" || wp.RollbackUntil == nil || time.Until(*wp.RollbackUntil) < 14*time.Minute || wp.AlertReason != "" {
		t.Errorf("widgets on prod-1, completed just now: on unhealthy %q until %v (%q), want a rollback for 15 minutes", wp.OnUnhealthy, wp.RollbackUntil, wp.AlertReason)
	}
	if gd.OnUnhealthy != "alert" || gd.RollbackUntil != nil || !strings.Contains(gd.AlertReason, "past its bake window (15m0s after it completed at "+completed.Format(time.RFC3339)+")") {
		t.Errorf("gadgets on dev-b, completed an hour ago: on unhealthy %q until %v (%q), want an alert past the bake window", gd.OnUnhealthy, gd.RollbackUntil, gd.AlertReason)
	}

	r = b.do("GET", "/api/v1/fleet?environment=Production", b.viewer(), nil)
	f = api.Fleet{}
	if r.json(t, &f); len(f.Clusters) != 1 || f.Clusters[0].Name != "prod-1" || cellKeys(f.Cells) != "widgets@prod-1" || len(f.Operators) != 3 {
		t.Fatalf("Production only: %s", r.body)
	}
	expectInvalid(t, "unknown environment", b.do("GET", "/api/v1/fleet?environment=QA", b.viewer(), nil), "environment")
	expect(t, "no token", b.do("GET", "/api/v1/fleet", "", nil), http.StatusUnauthorized)

	empty := setup(t, engine)
	r = empty.do("GET", "/api/v1/fleet", empty.viewer(), nil)
	if r.status != http.StatusOK || string(r.body) != `{"operators":[],"clusters":[],"cells":[]}`+"\n" && string(r.body) != `{"operators":[],"clusters":[],"cells":[]}` {
		t.Fatalf("empty fleet: %d %q", r.status, r.body)
	}
}

func TestDrift(t *testing.T) {
	for _, c := range []struct{ version, latest, want string }{
		{"1.2.0", "1.10.0", "behind"}, {"1.10.0", "1.10.0", "current"}, {"2.0.0", "1.10.0", "current"},
		{"v1.0.0", "v1.0.1", "behind"}, {"1.0.0", "", "current"}, {"abc", "abd", "behind"},
	} {
		if got := drift(c.version, c.latest); got != c.want {
			t.Errorf("drift(%s, %s) = %s, want %s", c.version, c.latest, got, c.want)
		}
	}
}

// BenchmarkFleet is GET /api/v1/fleet over 50 operators × 200 clusters (10,000 cells, each with a
// health record; one in ten not healthy), through the real server on each engine.
func BenchmarkFleet(b *testing.B) {
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			url, client, token, st := fleetBenchServer(b, engine)
			seedBenchFleet(b, st, 50, 200)
			b.ResetTimer()
			var size int
			var wire, plain countingReader
			for b.Loop() {
				req, err := http.NewRequest("GET", url+"/api/v1/fleet", nil)
				if err != nil {
					b.Fatal(err)
				}
				// As a browser asks: the answer comes gzipped, unpacked here (the time included).
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Accept-Encoding", "gzip")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				wire.r, wire.n = resp.Body, 0
				zr, err := gzip.NewReader(&wire)
				if err != nil {
					b.Fatalf("fleet: %d %s: %v", resp.StatusCode, resp.Header.Get("Content-Encoding"), err)
				}
				plain.r, plain.n = zr, 0
				var f api.Fleet
				if err := json.NewDecoder(&plain).Decode(&f); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || len(f.Cells) != 50*200 {
					b.Fatalf("fleet: %d, %d cells", resp.StatusCode, len(f.Cells))
				}
				size = len(f.Cells)
			}
			b.ReportMetric(float64(size), "cells")
			b.ReportMetric(float64(plain.n), "json-bytes")
			b.ReportMetric(float64(wire.n), "wire-bytes")
		})
	}
}

// seedBenchFleet writes ops operators with two versions each and clusters clusters, every
// operator deployed to every cluster, each with a health record, in one transaction.
func seedBenchFleet(b *testing.B, st store.Store, ops, clusters int) {
	b.Helper()
	ctx := context.Background()
	err := store.WithTx(ctx, st, func(ctx context.Context, tx store.Tx) error {
		names := map[string]store.Environment{}
		for i := range clusters {
			env := store.Environments[i%3]
			name := fmt.Sprintf("cluster-%03d", i)
			seedCluster(b, tx, name, env, store.HealthHealthy, "")
			names[name] = env
		}
		for i := range ops {
			op, err := tx.OperatorCreate(ctx, &store.OperatorCreateParams{ID: uuid.NewString(), Name: fmt.Sprintf("op-%02d", i),
				Namespace: "ns", ChartRepository: "https://charts.example.com", ChartName: "c", Now: time.Now()})
			if err != nil {
				return err
			}
			for _, v := range []string{"1.0.0", "1.1.0"} {
				if _, err := tx.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: v, Now: time.Now()}); err != nil {
					return err
				}
			}
			id := seedLive(b, tx, op, "1.0.0", names)
			n := 0
			for name := range names {
				h, msg := api.Healthy, ""
				if n++; n%10 == 0 {
					h, msg = api.Degraded, "metrics not served"
				}
				seedHealth(b, tx, op.Name, name, id, h, msg)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// benchSecret is the HS256 secret of fleetBenchServer's API.
const benchSecret = "0123456789abcdef0123456789abcdef-bench"

// fleetBenchServer serves the API over TLS on a fresh store of engine; it returns the URL, a client
// trusting it, a Viewer's token and the store.
func fleetBenchServer(b *testing.B, engine string) (string, *http.Client, string, store.Store) {
	b.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if engine == "postgres" {
		st, err = pgstore.Open(ctx, pgtest.NewDatabase(b), pgstore.WithMigrate())
	} else {
		st, err = sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "manager.db"), sqlitestore.WithMigrate())
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	secret := []byte(benchSecret)
	_, ts := serveOver(b, st, secret)
	tok, err := auth.Mint(secret, "bench", []auth.Role{auth.Viewer}, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return ts.URL, ts.Client(), tok, st
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// serveOver serves the API over TLS on st with an HS256 secret (also the sign-in ticket secret),
// its own cluster keyring, chart reader and engine; nothing is logged. It returns the server and
// its TLS test server.
func serveOver(tb testing.TB, st store.Store, secret []byte) (*Server, *httptest.Server) {
	tb.Helper()
	log := slog.New(slog.DiscardHandler)
	line, err := clusters.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	keyring, err := clusters.ParseKeyring([]byte(line))
	if err != nil {
		tb.Fatal(err)
	}
	cm, err := clusters.New(clusters.Config{Store: st, Keyring: keyring, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	charts, err := operators.New(operators.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	rollouts, err := rolloutengine.New(rolloutengine.Config{Store: st, Clusters: cm, Charts: charts, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	verifier, err := auth.NewHS256(secret, auth.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(Config{}, Deps{Store: st, Clusters: cm, Charts: charts, Rollouts: rollouts, Verifier: verifier,
		Limiter: ratelimit.New(map[string]ratelimit.Rule{}, time.Now), Logger: log, SessionSecret: secret})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewTLSServer(srv.Handler())
	tb.Cleanup(ts.Close)
	return srv, ts
}
