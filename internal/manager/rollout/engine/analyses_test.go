package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/analysis/promtest"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// errorRateQuery is the operator's reconcile error rate over a short window (Prometheus scrapes
// every second), in its release's namespace.
const errorRateQuery = `sum(rate(controller_runtime_reconcile_total{result="error",namespace="{{namespace}}"}[5s])) / sum(rate(controller_runtime_reconcile_total{namespace="{{namespace}}"}[5s]))`

// driven keeps c reconciling perSecond requests a second, errorRatio of them failing, until the
// test ends.
func driven(t *testing.T, c *promtest.Controller, errorRatio float64) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			c.Drive(500*time.Millisecond, 40, errorRatio)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// Analyses in a deployment, against a real Prometheus scraping real controller-runtime
// controllers labelled with the releases' namespaces: a deployment to a cluster without a
// Prometheus is refused naming it; an operator whose reconciles succeed completes only after
// its analysis took its count of measurements (longer than the hold); one whose reconciles fail
// half the time is rolled back within the stage, the query and the value in the reason. The
// deployment keeps the template as it was when it was created.
func TestAnalyses_PassAndFailAgainstRealPrometheus(t *testing.T) {
	good := promtest.NewController(t, "engine-good", map[string]string{"namespace": "op-ag"})
	bad := promtest.NewController(t, "engine-bad", map[string]string{"namespace": "op-ab"})
	driven(t, good, 0)
	driven(t, bad, 0.5)
	prom := promtest.Start(t, promtest.Options{Targets: []promtest.Target{good.Target, bad.Target}})
	var st store.Store
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.Prometheus = func(ctx context.Context, cluster string) (analysis.Prometheus, error) {
			return analysis.Lookup(ctx, st, nil, cluster)
		}
	})
	st = h.store
	ctx := context.Background()
	h.operator("ag", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible), charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible))
	h.operator("ab", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible), charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible))
	spec, err := analysis.Parse(api.Analysis{Name: "error-rate", Query: errorRateQuery, Interval: "PT1S", Count: 4,
		SuccessCondition: api.AnalysisCondition{Max: ptr(0.01)}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(spec)
	if _, err := st.AnalysisTemplateCreate(ctx, &store.AnalysisTemplate{Name: "error-rate", Spec: raw, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.start()
	for _, op := range []string{"ag", "ab"} {
		h.waitStatus(h.submit(`{"operator": "`+op+`", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct",
			"directConfig": {"skipHealthChecks": true}}`).ID, store.DeploymentCompleted)
	}

	withAnalysis := func(op string) string {
		return `{"operator": "` + op + `", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Rolling",
			"rollingConfig": {"validationPeriod": "PT1S"}, "analyses": [{"template": "error-rate"}]}`
	}
	req, err := api.DecodeDeploymentRequest([]byte(withAnalysis("ag")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.eng.Submit(ctx, req, "alice", "req-np")
	if e, ok := invalid.As(err); !ok || e.Field != "analyses" || !strings.Contains(e.Message, `cluster "dev-1" has no Prometheus`) {
		t.Fatalf("submit without a Prometheus: %v, want a 400 naming dev-1", err)
	}
	if _, err := st.ClusterPrometheusSet(ctx, &store.ClusterPrometheus{ClusterName: "dev-1", URL: prom.URL, AuthKind: analysis.AuthNone, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	dg := h.submit(withAnalysis("ag"))
	db := h.submit(withAnalysis("ab"))
	// Edited after the deployments were created: they keep the copy they were created with.
	loose := strings.Replace(string(raw), `"max":0.01`, `"max":0.9`, 1)
	if _, err := st.AnalysisTemplateUpdate(ctx, &store.AnalysisTemplate{Name: "error-rate", Spec: json.RawMessage(loose), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	dg = h.waitStatus(dg.ID, store.DeploymentCompleted)
	ms, err := st.AnalysisMeasurementList(ctx, dg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 {
		t.Fatalf("%d measurements of the passing deployment, want its count, 4: %+v", len(ms), ms)
	}
	for _, m := range ms {
		if m.Verdict != "Successful" || m.Value == nil || *m.Value != 0 || m.Cluster != "dev-1" || m.StageIndex != 0 ||
			!strings.Contains(m.Query, `namespace="op-ag"`) {
			t.Errorf("measurement %+v, want Successful 0 for op-ag", m)
		}
	}
	if span := ms[3].MeasuredAt.Sub(ms[0].MeasuredAt); span < 3*time.Second {
		t.Errorf("measurements over %s, want ≥ 3 intervals of 1s: the stage passed before the analysis had its count", span)
	}

	db = h.wait(db.ID, "rolled back", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentRolledBack || d.Status == store.DeploymentFailed
	})
	if db.Status != store.DeploymentRolledBack || !strings.HasPrefix(db.RollbackReason, "stage 1: analysis Failed on dev-1: analysis error-rate failed") ||
		!strings.Contains(db.RollbackReason, `namespace="op-ab"`) || !strings.Contains(db.RollbackReason, "> max 0.01") {
		t.Fatalf("failing analysis: %s %q, want rolled back with the query and value", db.Status, db.RollbackReason)
	}
	if !strings.Contains(h.eventLog(db.ID), "analysis.measured") {
		t.Errorf("no analysis.measured event: %s", h.eventLog(db.ID))
	}
}

func ptr[T any](v T) *T { return &v }
