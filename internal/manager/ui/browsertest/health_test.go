//go:build browser || e2e

package browsertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// The operator of the health world (seedHealthWorld): on dev-1 and prod-1 through a deployment
// that completed two hours ago (its bake window long past), on staging-1 through one that
// completed just now (within it).
const (
	healthOperator = "gizmos"
	oldVersion     = "1.1.0"
	newVersion     = "1.2.0"
)

// healthWorld serves a manager on a store holding the health world, and opens a tab on it signed
// in as a Viewer.
func healthWorld(t *testing.T) *tab {
	t.Helper()
	url, secret := storeServer(t, seedHealthWorld)
	tok, err := auth.Mint(secret, "victor", []auth.Role{auth.Viewer}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, &managertest.Manager{URL: url})
	b.open("/login", sel("login-token"))
	b.do("sign in", chromedp.SendKeys(chromedp.CSS(sel("login-token")), tok), chromedp.Click(chromedp.CSS(sel("login-submit"))))
	b.waitText(sel("user-subject"), "victor")
	return b
}

// seedHealthWorld writes the clusters, the operator, its two Completed deployments and one
// stored health check per cluster, as the health loop stores them (api.OperatorHealthCheck):
//   - dev-1 Healthy: 2 of 40 resources failing, both the tenants' and failing at the baseline
//     (the last Healthy check); the operator's own reconcile error rate 0 of 120;
//   - prod-1 Unhealthy: 3 resources newly failing under the version (the operator's) beside 3
//     failing since before the deployment (the tenants'), judged against the deployment's
//     start; reconcile errors 50 of 200 (25 %) against 1 % before; past the bake window, so an
//     alert and no rollback;
//   - staging-1 Unhealthy the same way, within the bake window: a rollback, no alert.
func seedHealthWorld(tb testing.TB, st store.Store) {
	tb.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	envs := map[string]store.Environment{"dev-1": store.EnvironmentDev, "staging-1": store.EnvironmentStaging, "prod-1": store.EnvironmentProduction}
	for _, name := range []string{"dev-1", "staging-1", "prod-1"} {
		if _, err := st.ClusterCreate(ctx, &store.ClusterCreateParams{ID: uuid.NewString(), Name: name, Environment: envs[name],
			KubernetesVersion: "v1.37.1", Health: store.HealthHealthy, HealthCheckedAt: &now, KubeconfigCiphertext: []byte("sealed"),
			KeyID: "test", Now: now}); err != nil {
			tb.Fatal(err)
		}
	}
	op, err := st.OperatorCreate(ctx, &store.OperatorCreateParams{ID: uuid.NewString(), Name: healthOperator, Namespace: "gizmo-system",
		ChartRepository: "https://charts.example.com", ChartName: healthOperator, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range []string{oldVersion, newVersion} {
		if _, err := st.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: v, Digest: "sha256:" + v, Now: now}); err != nil {
			tb.Fatal(err)
		}
	}
	long := now.Add(-2 * time.Hour)
	old := seedCompleted(tb, st, op, newVersion, long, "dev-1", "prod-1")
	recent := seedCompleted(tb, st, op, newVersion, now.Add(-time.Minute), "staging-1")

	blamed := func(cluster, deployment string, capturedAt time.Time) api.OperatorHealthCheck {
		return api.OperatorHealthCheck{ClusterName: cluster, Health: api.Unhealthy, ControllerPods: 1, WebhookStatus: api.WebhookNotConfigured,
			CRDReconciliation: api.ReconciliationFailing,
			Pods:              api.PodsStatus{Health: api.Healthy, Total: 1, Ready: 1},
			Webhooks:          api.WebhooksStatus{Health: api.Healthy},
			CRDs: api.ReconciliationStatus{Health: api.Unhealthy, CRDs: 1, Resources: 40, Ready: 34, Failing: 6, ErrorRate: 0.075,
				Messages:         []string{"gizmos.example.com: 3 newly failing under this version"},
				Baseline:         &api.BaselineSummary{CapturedAt: capturedAt, Source: health.BaselineDeploymentStart, DeploymentID: deployment, Resources: 40, Failing: 3, Metrics: true},
				OperatorFailures: api.OperatorFailures{NewlyFailing: 3},
				TenantFailures:   api.TenantFailures{FailingBefore: 3}},
			Metrics: api.MetricsStatus{Health: api.Unhealthy, Read: api.VerdictPassed,
				Window: &api.RateWindow{From: capturedAt, To: now, Basis: "baseline", Reconciles: 200, Errors: 50, ErrorRate: 0.25},
				Before: &api.RateWindow{From: capturedAt.Add(-time.Hour), To: capturedAt, Basis: "last-healthy", Reconciles: 300, Errors: 3, ErrorRate: 0.01}}}
	}
	storeCheck(tb, st, old, api.OperatorHealthCheck{ClusterName: "dev-1", Health: api.Healthy, ControllerPods: 1,
		WebhookStatus: api.WebhookNotConfigured, CRDReconciliation: api.ReconciliationActive,
		Pods:     api.PodsStatus{Health: api.Healthy, Total: 1, Ready: 1},
		Webhooks: api.WebhooksStatus{Health: api.Healthy},
		CRDs: api.ReconciliationStatus{Health: api.Healthy, CRDs: 1, Resources: 40, Ready: 38, Failing: 2,
			Baseline:       &api.BaselineSummary{CapturedAt: now.Add(-10 * time.Minute), Source: health.BaselineLastHealthy, Resources: 40, Failing: 2, Metrics: true},
			TenantFailures: api.TenantFailures{FailingBefore: 2}},
		Metrics: api.MetricsStatus{Health: api.Healthy, Read: api.VerdictPassed,
			Window: &api.RateWindow{From: now.Add(-10 * time.Minute), To: now, Basis: "baseline", Reconciles: 120}}}, now)
	storeCheck(tb, st, old, blamed("prod-1", old, long.Add(-5*time.Minute)), now)
	storeCheck(tb, st, recent, blamed("staging-1", recent, now.Add(-3*time.Minute)), now)
}

// seedCompleted records a Completed deployment of op's version on clusters that finished at
// finished, with the default bake window of 15 minutes, as the engine leaves one.
func seedCompleted(tb testing.TB, st store.Store, op *store.Operator, version string, finished time.Time, clusters ...string) string {
	tb.Helper()
	d := &store.Deployment{OperatorID: op.ID, OperatorName: op.Name, Version: version, Strategy: "Direct", Status: store.DeploymentCompleted,
		Reason: "completed", RequestedBy: "olga", CreatedAt: finished.Add(-time.Minute), FinishedAt: &finished, BakeWindow: 15 * time.Minute}
	for _, c := range clusters {
		env := map[string]store.Environment{"dev-1": store.EnvironmentDev, "staging-1": store.EnvironmentStaging, "prod-1": store.EnvironmentProduction}[c]
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: c, Environment: env, Status: store.ClusterHealthy,
			HelmRevision: 2, Namespace: op.Namespace, Release: op.Name})
	}
	out, err := st.DeploymentCreate(context.Background(), d)
	if err != nil {
		tb.Fatal(err)
	}
	return out.ID
}

// storeCheck stores res as the health loop's latest check of the operator on its cluster.
func storeCheck(tb testing.TB, st store.Store, deployment string, res api.OperatorHealthCheck, at time.Time) {
	tb.Helper()
	res.LastChecked = at
	raw, err := json.Marshal(res)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.OperatorHealthRecord(context.Background(), &store.OperatorHealthRecordParams{OperatorName: healthOperator,
		ClusterName: res.ClusterName, DeploymentID: deployment, Health: string(res.Health), Result: raw, CheckedAt: at}); err != nil {
		tb.Fatal(err)
	}
}

// healthRow is one row of the operator page's health table as the page shows it.
type healthRow struct {
	Cluster  string `json:"cluster"`
	CRDs     string `json:"crds"`
	Errors   string `json:"errors"`
	Baseline string `json:"baseline"`
	Alert    string `json:"alert"`
}

// TestOperatorHealth_BaselineErrorRateAndBlame opens the operator's page: its health table
// (named "Health per cluster" for a screen reader, with the "Operator errors" and "Judged
// against" columns) says per cluster whose the failing custom resources are (prod-1: the
// operator's 3, the tenants' 3 failing before; dev-1: the tenants' 2 alone), the operator's own
// reconcile error rate and the rate before (25.0 % of 200 against 1.0 %), the baseline it was
// judged against (the deployment's start, 3 of 40 failing then; dev-1 the last Healthy check)
// and, past the bake window, that failed checks only alert. axe-core finds nothing wrong with it.
func TestOperatorHealth_BaselineErrorRateAndBlame(t *testing.T) {
	b := healthWorld(t)
	b.open("/operators/"+healthOperator, `[data-testid="operator-health-row"][data-cluster="prod-1"]`)
	heads := get(b, "read the health table's head", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="operator-health"] thead th')].map((th) => th.textContent)`))
	if !strings.Contains(strings.Join(heads, "|"), "CRD reconciliation|Operator errors|Judged against") {
		t.Errorf("the health table's columns: %q", heads)
	}
	if name := get(b, "read the table's caption", chromedp.Evaluate[string](`document.querySelector('[data-testid="operator-health"] caption')?.textContent || ''`)); name != "Health per cluster" {
		t.Errorf("the health table is named %q, want \"Health per cluster\"", name)
	}
	rows := map[string]healthRow{}
	for _, r := range get(b, "read the health rows", chromedp.Evaluate[[]healthRow](`[...document.querySelectorAll('[data-testid="operator-health-row"]')].map((r) => ({
		cluster: r.dataset.cluster, crds: r.children[4].innerText, errors: r.querySelector('[data-testid="operator-health-errors"]').innerText,
		baseline: r.querySelector('[data-testid="operator-health-baseline"]').innerText,
		alert: r.querySelector('[data-testid="operator-health-alert"]')?.innerText || ''}))`)) {
		rows[r.Cluster] = r
	}
	contains := func(cluster, part, got string, want ...string) {
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s's %s says %q, want %q in it", cluster, part, got, w)
			}
		}
	}
	prod, dev, staging := rows["prod-1"], rows["dev-1"], rows["staging-1"]
	contains("prod-1", "CRD reconciliation", prod.CRDs, "Failing", "the operator's: 3 failing", "the tenants': 3 failing (3 before)")
	contains("prod-1", "operator errors", prod.Errors, "25.0 %", "(50 of 200)", "before: 1.0 %")
	contains("prod-1", "baseline", prod.Baseline, "the deployment's start", "3 of 40 failing then")
	contains("prod-1", "alert", prod.Alert, "alert, no automatic rollback", "past its bake window")
	contains("dev-1", "CRD reconciliation", dev.CRDs, "Active", "the tenants': 2 failing (2 before)")
	contains("dev-1", "operator errors", dev.Errors, "0.0 %", "(0 of 120)")
	contains("dev-1", "baseline", dev.Baseline, "the last Healthy check", "2 of 40 failing then")
	if strings.Contains(dev.CRDs, "the operator's") || dev.Alert != "" {
		t.Errorf("dev-1 blames the operator or alerts: %+v", dev)
	}
	if staging.Alert != "" {
		t.Errorf("staging-1, within its bake window, says %q: its failed checks roll back, they do not only alert", staging.Alert)
	}
	b.screenshot("operator-health.png")
	b.audit("an operator's health")
}

// TestFleet_AlertPastTheBakeWindow: on the Fleet, prod-1's cell (Unhealthy, its deployment two
// hours past its 15-minute bake window) says "alert", and its accessible name says why (no
// automatic rollback, past its bake window); staging-1's (Unhealthy within the window) and
// dev-1's (Healthy) do not. The alert fits the 56 px cell: nothing overflows it or is cut, and
// the word is legible on the cell's colour (contrast ≥ 4.5, light and dark).
func TestFleet_AlertPastTheBakeWindow(t *testing.T) {
	b := healthWorld(t)
	b.open("/fleet", sel("fleet-grid"))
	cells := map[string]fleetCell{}
	for _, c := range b.fleetCells(healthOperator, 3) {
		cells[c.Cluster] = c
	}
	if c := cells["prod-1"]; c.Health != "Unhealthy" || !strings.Contains(strings.ToLower(c.Text), "alert") {
		t.Errorf("prod-1's cell %+v: want Unhealthy saying alert", c)
	}
	for _, name := range []string{"staging-1", "dev-1"} {
		if c := cells[name]; strings.Contains(strings.ToLower(c.Text), "alert") {
			t.Errorf("%s's cell says %q: no alert within the bake window or when Healthy", name, c.Text)
		}
	}
	prod := `[data-testid="fleet-cell"][data-cluster="prod-1"]`
	b.waitAttr(prod, "data-on-unhealthy", "alert", waitTimeout)
	b.waitAttr(`[data-testid="fleet-cell"][data-cluster="staging-1"]`, "data-on-unhealthy", "rollback", waitTimeout)
	name := get(b, "read prod-1's name", chromedp.Evaluate[string](`document.querySelector('`+prod+` a').getAttribute('aria-label')`))
	for _, want := range []string{healthOperator + " on prod-1: " + newVersion, "Unhealthy", "alert, no automatic rollback", "past its bake window"} {
		if !strings.Contains(name, want) {
			t.Errorf("prod-1's cell is named %q: want %q in it", name, want)
		}
	}
	for _, scheme := range []string{"light", "dark"} {
		b.colorScheme(scheme)
		fit := get(b, "measure prod-1's cell", chromedp.Evaluate[cellFit](`(() => {
			const cell = document.querySelector('`+prod+`'), body = cell.querySelector('.fleet-cell-body'), alert = cell.querySelector('.fleet-alert');
			const cr = cell.getBoundingClientRect();
			const out = [...body.querySelectorAll('span')].filter((s) => {
				const r = s.getBoundingClientRect();
				return r.width > 0 && (r.left < cr.left - 0.5 || r.right > cr.right + 0.5 || r.top < cr.top - 0.5 || r.bottom > cr.bottom + 0.5);
			}).map((s) => s.className || s.textContent);
			const lum = (c) => {
				const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map((v) => {
					const s = Number(v) / 255;
					return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
				});
				return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
			};
			const [hi, lo] = [lum(getComputedStyle(alert).color), lum(getComputedStyle(cell).backgroundColor)].sort((x, y) => y - x);
			return {height: cr.height, overflowX: body.scrollWidth > body.clientWidth, overflowY: body.scrollHeight > body.clientHeight,
				outside: out, contrast: (hi + 0.05) / (lo + 0.05)};
		})()`))
		if fit.Height > 56.5 || fit.OverflowX || fit.OverflowY || len(fit.Outside) > 0 || fit.Contrast < 4.5 {
			t.Errorf("%s: prod-1's cell with its alert: %+v; want it within 56 px, nothing outside, contrast ≥ 4.5", scheme, fit)
		}
	}
	b.colorScheme("")
	b.audit("the Fleet with an alert")
}

// cellFit is how a Fleet cell's content fits it.
type cellFit struct {
	Height    float64  `json:"height"`
	OverflowX bool     `json:"overflowX"`
	OverflowY bool     `json:"overflowY"`
	Outside   []string `json:"outside"`
	Contrast  float64  `json:"contrast"`
}
