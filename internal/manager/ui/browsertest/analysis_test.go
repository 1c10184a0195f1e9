//go:build browser || e2e

package browsertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/slipway-dev/slipway/internal/manager/analysis/promtest"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// reconcileErrors is the operator's reconcile error rate over the last 5 s, of its namespace.
const reconcileErrors = `sum(rate(controller_runtime_reconcile_total{result="error",namespace="{{namespace}}"}[5s])) / sum(rate(controller_runtime_reconcile_total{namespace="{{namespace}}"}[5s]))`

// measured is one measurement of an analysis run as the deployment page shows it.
type measured struct {
	Verdict string `json:"verdict"`
	Text    string `json:"text"`
	Query   string `json:"query"`
}

// analysisRun is one analysis run as the deployment page shows it.
type analysisRun struct {
	Phase        string     `json:"phase"`
	Cluster      string     `json:"cluster"`
	Text         string     `json:"text"`
	Summary      string     `json:"summary"`
	Measurements []measured `json:"measurements"`
}

// TestAnalysis_DeploymentPageShowsRuns deploys with an analysis against a real Prometheus
// scraping a real controller-runtime controller labelled with the operator's namespace (its
// reconciles all succeed): a manager with one real cluster whose Prometheus is set through the
// API, a Rolling deployment whose hold runs "reconcile-errors" twice. Its page shows the run
// (Successful, 2/2 measured, on dev-1, stage 1) and, reached with the keyboard alone (Tab to the
// run's Measurements, Enter opens them), each measurement: Successful, value 0, and the query
// with the namespace bound. The disclosure's accessible name says whose measurements they are,
// and axe-core finds nothing wrong with the page.
func TestAnalysis_DeploymentPageShowsRuns(t *testing.T) {
	// The test binary's fleet is sized by its first user: the shared manager's four clusters.
	testenv.WorkloadFleet(t, len(managertest.DefaultClusters))
	m := managertest.Start(t, managertest.Options{Clusters: []managertest.Cluster{{Name: "dev-1", Environment: "Dev"}}, NoSeed: true})
	ctrl := promtest.NewController(t, "browser-analysis", map[string]string{"namespace": m.Operator})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // the operator reconciling 40 requests a second, none failing, until the test ends
		defer close(done)
		for ctx.Err() == nil {
			ctrl.Drive(500*time.Millisecond, 40, 0)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	prom := promtest.Start(t, promtest.Options{Targets: []promtest.Target{ctrl.Target}})
	bound := strings.ReplaceAll(reconcileErrors, "{{namespace}}", m.Operator)
	waitForData(t, prom.URL, bound)
	m.Must(t, http.MethodPut, "/api/v1/clusters/dev-1/prometheus", managertest.Alice, api.PrometheusRequest{URL: prom.URL}, http.StatusOK)

	limit := 0.01
	d := m.Deploy(t, managertest.Alice, api.DeploymentRequest{Operator: m.Operator, Version: managertest.SeedVersion, Clusters: []string{"dev-1"},
		Strategy: api.StrategyRolling, RollingConfig: &api.RollingConfig{ValidationPeriod: "PT1S"},
		Analyses: []api.AnalysisRef{{Inline: &api.Analysis{Name: "reconcile-errors", Query: reconcileErrors,
			SuccessCondition: api.AnalysisCondition{Max: &limit}, Interval: "PT1S", Count: 2}}}})
	d = m.WaitFor(t, d.ID, "Completed or waiting for approval", 3*time.Minute, func(d api.Deployment) bool {
		return d.Status == "Completed" || d.Status == "WaitingApproval"
	})
	if d.Status == "WaitingApproval" {
		// dev-1 is shared with the package's other tests: one may have stored a later version's
		// breaking Widget CRD there. Bob approves this version over it, as an Admin would.
		m.ApproveAll(t, d.ID, managertest.Bob)
		d = m.WaitStatus(t, d.ID, "Completed", 3*time.Minute)
	}

	b := newTab(t, m)
	b.signIn(managertest.Vera)
	b.open("/deployments/"+d.ID, `[data-testid="analysis-run"]`)
	b.waitAttr(`[data-testid="analysis-run"]`, "data-phase", "Successful", waitTimeout)
	summary := `[data-testid="analysis-run"] details.measurements summary`
	name := get(b, "read the Measurements' name", chromedp.Evaluate[string](`document.querySelector('`+summary+`').getAttribute('aria-label') || ''`))
	if name != "Measurements of reconcile-errors on dev-1, stage 1" {
		t.Errorf("the run's Measurements are named %q, want \"Measurements of reconcile-errors on dev-1, stage 1\"", name)
	}
	// The keyboard alone: Tab until the Measurements have the focus, Enter opens them.
	for i := 0; ; i++ {
		if i == 60 {
			t.Fatalf("60 Tabs never reached the run's Measurements")
		}
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		if get(b, "read the focus", chromedp.Evaluate[bool](`document.activeElement === document.querySelector('`+summary+`')`)) {
			break
		}
	}
	if s := get(b, "read the focus", chromedp.Evaluate[focusStop](focusNow)); !s.Indicator {
		t.Errorf("the focused Measurements show no focus ring: %s", s.Style)
	}
	b.do("press Enter", chromedp.KeyEvent(kb.Enter))
	b.visible(`[data-testid="analysis-measurement"]`)

	runs := get(b, "read the analysis runs", chromedp.Evaluate[[]analysisRun](`[...document.querySelectorAll('[data-testid="analysis-run"]')].map((r) => ({
		phase: r.dataset.phase, cluster: r.dataset.cluster, text: [...r.children].slice(0, 5).map((c) => c.innerText).join('|'),
		summary: r.querySelector('summary').innerText,
		measurements: [...r.querySelectorAll('[data-testid="analysis-measurement"]')].map((li) => ({
			verdict: li.dataset.verdict, text: li.innerText, query: li.querySelector('pre').innerText}))}))`))
	if len(runs) != 1 {
		t.Fatalf("%d analysis runs shown, want 1: %+v", len(runs), runs)
	}
	run := runs[0]
	if run.Phase != "Successful" || run.Cluster != "dev-1" || run.Text != "reconcile-errors|dev-1|1|Successful|2/2" {
		t.Errorf("the run shows %+v: want reconcile-errors on dev-1, stage 1, Successful, 2/2", run)
	}
	if len(run.Measurements) != 2 {
		t.Fatalf("%d measurements shown, want 2: %+v", len(run.Measurements), run.Measurements)
	}
	for i, ms := range run.Measurements {
		if ms.Verdict != "Successful" || !strings.Contains(ms.Text, "Successful value 0") || ms.Query != bound {
			t.Errorf("measurement %d: %+v; want Successful, value 0, the query %s", i+1, ms, bound)
		}
	}
	// A query is one long line: it wraps in its column, the page is no wider than the window.
	if w := get(b, "measure the page", chromedp.Evaluate[float64](`document.documentElement.scrollWidth`)); w > viewportWidth {
		t.Errorf("the page is %.0f px wide in a %d px window: the measurements' queries widen it", w, viewportWidth)
	}
	b.do("leave the Measurements", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	b.screenshot("analysis-runs.png")
	b.audit("a deployment with analyses")
}

// waitForData waits until Prometheus answers query with a sample: a rate needs two scrapes in its
// range, and a measurement with no data is Inconclusive (which would roll the deployment back).
func waitForData(t *testing.T, base, query string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		if err == nil && len(out.Data.Result) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has no data for %s after 30s (%v)", query, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
