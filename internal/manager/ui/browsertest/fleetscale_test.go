//go:build browser || e2e

package browsertest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
	rolloutengine "github.com/slipway-dev/slipway/internal/manager/rollout/engine"
	"github.com/slipway-dev/slipway/internal/manager/server"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/manager/ui"
)

// The fleet of BenchmarkFleet_Browser: 50 operators × 200 clusters, as the API's BenchmarkFleet.
const (
	scaleOperators = 50
	scaleClusters  = 200
)

// BenchmarkFleet_Browser opens the Fleet page in chromium on a manager whose store holds 50
// operators × 200 clusters (10,000 cells, each with a health record, one in ten Degraded), signed
// in as a Viewer. Each iteration loads /fleet and measures, in the page: the time from the
// navigation's start to the first frame showing a cell (ms-to-grid: the 3 MB answer fetched,
// parsed and laid out), the cells in the DOM (the grid is virtualised: only those in view and a
// few more), the page's JavaScript heap after a garbage collection, and the time from scrolling
// the grid to its far corner (the last operator on the last cluster) to the frame after that
// cell rendered (ms-to-far-end).
//
//	make ui && KUBEBUILDER_ASSETS=$(hack/controlplane.sh) go test -tags e2e -run '^$' -bench BenchmarkFleet_Browser -benchtime=5x ./internal/manager/ui/browsertest/
func BenchmarkFleet_Browser(b *testing.B) {
	url, token := scaleServer(b)
	ctx := scaleTab(b, url, token)
	far := fmt.Sprintf("%d:%d", scaleOperators-1, scaleClusters-1)
	var grid, end, cells, heap, elements float64
	n := 0
	for b.Loop() {
		m := measureFleet(b, ctx, url, far)
		grid, end, cells, heap, elements = grid+m.Grid, end+m.FarEnd, cells+float64(m.Cells), heap+m.HeapMB, elements+float64(m.Elements)
		n++
	}
	f := float64(n)
	b.ReportMetric(grid/f, "ms-to-grid")
	b.ReportMetric(end/f, "ms-to-far-end")
	b.ReportMetric(cells/f, "cells-in-DOM")
	b.ReportMetric(elements/f, "DOM-elements")
	b.ReportMetric(heap/f, "heap-MB")
}

// fleetFigures are one load of the Fleet page.
type fleetFigures struct {
	Grid     float64 `json:"-"`
	FarEnd   float64 `json:"-"`
	Cells    int     `json:"cells"`
	Elements int     `json:"elements"`
	HeapMB   float64 `json:"-"`
}

// measureFleet loads /fleet and measures it (BenchmarkFleet_Browser); far is the data-pos of the
// grid's far corner.
func measureFleet(tb testing.TB, ctx context.Context, url, far string) fleetFigures {
	tb.Helper()
	scaleRun(tb, ctx, "open /fleet", chromedp.Navigate(url+"/fleet"))
	grid := scaleRun(tb, ctx, "wait for the grid", chromedp.Poll[float64](`document.querySelector('[data-testid="fleet-cell"]') && performance.now()`,
		chromedp.WithPollingTimeout(time.Minute)))
	m := scaleRun(tb, ctx, "count the DOM", chromedp.Evaluate[fleetFigures](`({cells: document.querySelectorAll('[data-testid="fleet-cell"]').length,
		elements: document.getElementsByTagName('*').length})`))
	m.Grid = grid
	m.HeapMB = scaleRun(tb, ctx, "measure the heap", func(ctx context.Context, t *chromedp.Target) (float64, error) {
		if _, err := cdp.Call(ctx, t, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
			return 0, err
		}
		h, err := cdp.Call(ctx, t, runtime.GetHeapUsage, cdp.Empty{})
		return h.UsedSize / (1 << 20), err
	})
	m.FarEnd = scaleRun(tb, ctx, "scroll to the far corner", chromedp.Evaluate[float64](fmt.Sprintf(`(async (far) => {
		const g = document.querySelector('[data-testid="fleet-grid"]');
		const frame = () => new Promise((r) => requestAnimationFrame(r));
		const t0 = performance.now();
		g.scrollTo({top: g.scrollHeight, left: g.scrollWidth});
		while (!g.querySelector('[data-pos="' + far + '"]')) {
			if (performance.now() - t0 > 60000) throw new Error('the far corner ' + far + ' never rendered');
			await frame();
		}
		await frame();
		return performance.now() - t0;
	})(%q)`, far), chromedp.EvalAwaitPromise))
	if m.Cells == 0 || m.Cells >= scaleOperators*scaleClusters {
		tb.Fatalf("%d cells in the DOM: want some, and far fewer than the fleet's %d (virtualised)", m.Cells, scaleOperators*scaleClusters)
	}
	return m
}

// scaleRun runs a on the tab ctx within two minutes and returns its value, failing tb with what
// on an error.
func scaleRun[T any](tb testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	tb.Helper()
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	return v
}

// scaleTab opens a tab signed in with token (pasted on the sign-in page), closed when tb ends.
func scaleTab(tb testing.TB, url, token string) context.Context {
	tb.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	tb.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab, with no timeout: it lives as long as ctx
		tb.Fatalf("opening a tab: %v", err)
	}
	c, cancelWait := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelWait()
	if err := chromedp.Do(c,
		chromedp.EmulateViewport(viewportWidth, viewportHeight),
		chromedp.Navigate(url+"/login"),
		chromedp.SendKeys(chromedp.CSS(sel("login-token")), token),
		chromedp.Click(chromedp.CSS(sel("login-submit"))),
		chromedp.WaitVisible(chromedp.CSS(sel("user-subject"))),
	); err != nil {
		tb.Fatalf("signing in: %v", err)
	}
	return ctx
}

// scaleServer serves the manager's API and embedded UI over TLS (the test certificate the
// package's chromium trusts) on a SQLite store seeded with the fleet; it returns the URL and a
// Viewer's token.
func scaleServer(tb testing.TB) (string, string) {
	tb.Helper()
	url, secret := storeServer(tb, seedScaleFleet)
	return url, mintViewer(tb, secret)
}

// storeServer serves the manager's API and embedded UI over TLS (the test certificate the
// package's chromium trusts) on a SQLite store that seed wrote, with the rollout engine the
// manager runs (not started: nothing deploys); it returns the URL and the tokens' signing secret.
func storeServer(tb testing.TB, seed func(testing.TB, store.Store)) (string, []byte) {
	tb.Helper()
	if !ui.Built(ui.Dist()) {
		tb.Fatal("the test binary holds no web UI build: run make ui (cd web && npm ci && npm run build) first")
	}
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(tb.TempDir(), "manager.db"), sqlitestore.WithMigrate())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	seed(tb, st)
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
	secret := []byte("0123456789abcdef0123456789abcdef-ui-bench")
	verifier, err := auth.NewHS256(secret, auth.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := server.New(server.Config{}, server.Deps{Store: st, Clusters: cm, Charts: charts, Rollouts: rollouts, Verifier: verifier,
		Logger: log, Limiter: ratelimit.New(map[string]ratelimit.Rule{}, time.Now), UI: ui.New()})
	if err != nil {
		tb.Fatal(err)
	}
	return serveTLS(tb, srv), secret
}

// serveTLS serves srv on loopback with the test certificate.
func serveTLS(tb testing.TB, srv *server.Server) string {
	tb.Helper()
	cert, err := managertest.TestCertificate()
	if err != nil {
		tb.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	ts.StartTLS()
	tb.Cleanup(ts.Close)
	return ts.URL
}

func mintViewer(tb testing.TB, secret []byte) string {
	tb.Helper()
	tok, err := auth.Mint(secret, "bench", []auth.Role{auth.Viewer}, time.Hour, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// seedScaleFleet writes the clusters (cluster-000…, environments in turn) and the operators
// (op-00…, versions 1.0.0 and 1.1.0), each operator's 1.0.0 live on every cluster through a
// Completed deployment with a health record per cluster (every tenth Degraded), in one
// transaction: the fleet the Fleet page reads, as the API's BenchmarkFleet seeds it.
func seedScaleFleet(tb testing.TB, st store.Store) {
	tb.Helper()
	ctx := context.Background()
	now := time.Now()
	err := store.WithTx(ctx, st, func(ctx context.Context, tx store.Tx) error {
		envs := map[string]store.Environment{}
		for i := range scaleClusters {
			name, env := fmt.Sprintf("cluster-%03d", i), store.Environments[i%len(store.Environments)]
			at := now.UTC().Truncate(time.Second)
			if _, err := tx.ClusterCreate(ctx, &store.ClusterCreateParams{ID: uuid.NewString(), Name: name, Environment: env,
				KubernetesVersion: "v1.37.1", Health: store.HealthHealthy, HealthCheckedAt: &at, KubeconfigCiphertext: []byte("sealed"),
				KeyID: "bench", Now: now}); err != nil {
				return err
			}
			envs[name] = env
		}
		for i := range scaleOperators {
			if err := seedScaleOperator(ctx, tx, fmt.Sprintf("op-%02d", i), envs, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("seeding the fleet: %v", err)
	}
}

// seedScaleOperator writes one operator of seedScaleFleet, live on every cluster of envs.
func seedScaleOperator(ctx context.Context, tx store.Tx, name string, envs map[string]store.Environment, now time.Time) error {
	op, err := tx.OperatorCreate(ctx, &store.OperatorCreateParams{ID: uuid.NewString(), Name: name, Namespace: "ns",
		ChartRepository: "https://charts.example.com", ChartName: "c", Now: now})
	if err != nil {
		return err
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := tx.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: v, Now: now}); err != nil {
			return err
		}
	}
	d := &store.Deployment{OperatorID: op.ID, OperatorName: op.Name, Version: "1.0.0", Strategy: "Direct",
		Status: store.DeploymentCompleted, Reason: "completed", RequestedBy: "setup", CreatedAt: now}
	for cluster, env := range envs {
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: cluster, Environment: env,
			Status: store.ClusterHealthy, HelmRevision: 2, Namespace: op.Namespace, Release: op.Name})
	}
	dep, err := tx.DeploymentCreate(ctx, d)
	if err != nil {
		return err
	}
	n := 0
	for cluster := range envs {
		h := api.Healthy
		res := api.OperatorHealthCheck{ClusterName: cluster, Health: h, Pods: api.PodsStatus{Health: h},
			Webhooks: api.WebhooksStatus{Health: api.Healthy}, CRDs: api.ReconciliationStatus{Health: api.Healthy}}
		if n++; n%10 == 0 {
			res.Health, res.Pods.Health, res.Pods.Messages = api.Degraded, api.Degraded, []string{"metrics not served"}
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		if _, err := tx.OperatorHealthRecord(ctx, &store.OperatorHealthRecordParams{OperatorName: op.Name, ClusterName: cluster,
			DeploymentID: dep.ID, Health: string(res.Health), Result: raw, CheckedAt: now}); err != nil {
			return err
		}
	}
	return nil
}
