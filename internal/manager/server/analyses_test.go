package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/analysis/promtest"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

const errorRateTemplate = `{"name": "error-rate",
  "query": "sum(rate(controller_runtime_reconcile_total{result=\"error\",namespace=\"{{namespace}}\"}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace=\"{{namespace}}\"}[5m])) > {{floor}}",
  "successCondition": {"max": 0.01, "maxBaselineRatio": 1.2}, "interval": "PT1M", "count": 5, "failureLimit": 1,
  "inconclusiveLimit": 1, "args": [{"name": "floor", "value": "0"}]}`

// Analysis templates through the API: Admins write, every role reads; the query's PromQL and
// placeholders, the durations and the conditions are checked at the edge with messages naming
// the field; every write is audited.
func TestAnalysisTemplatesAPI(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine)
		a := &auditTrail{b: b}
		admin, viewer, olga := b.admin(), b.viewer(), b.token("olga", auth.Operator)
		r, _ := a.send("POST", "/api/v1/analysis-templates", admin, errorRateTemplate, http.StatusCreated,
			"alice", "analysistemplate.create", "analysisTemplate", "error-rate", "success")
		var got api.AnalysisTemplate
		r.json(t, &got)
		if got.Interval != "PT1M" || got.Count != 5 || got.ConsecutiveErrorLimit != 4 || *got.SuccessCondition.MaxBaselineRatio != 1.2 ||
			len(got.Args) != 1 || got.CreatedAt.IsZero() {
			t.Fatalf("created %+v", got)
		}
		a.send("POST", "/api/v1/analysis-templates", admin, errorRateTemplate, http.StatusConflict,
			"alice", "analysistemplate.create", "analysisTemplate", "error-rate", "invalid")
		a.send("POST", "/api/v1/analysis-templates", olga, errorRateTemplate, http.StatusForbidden,
			"olga", "analysistemplate.create", "route", "/api/v1/analysis-templates", "denied")

		for _, c := range []struct{ body, field, msg string }{
			{`{"name": "x", "query": "sum(rate(up[5m])", "successCondition": {"max": 1}}`, "query", "not valid PromQL"},
			{`{"name": "x", "query": "up{job=\"{{jobb}}\"}", "successCondition": {"max": 1}}`, "query", "unknown placeholder {{jobb}}"},
			{`{"name": "x", "query": "up", "successCondition": {}}`, "successCondition", "give at least one"},
			{`{"name": "x", "query": "up", "successCondition": {"max": 1}, "interval": "1m"}`, "interval", "ISO 8601"},
			{`{"name": "x", "query": "up", "successCondition": {"max": 1}, "args": [{"name": "a", "value": "x\"}"}]}`, "args", "quotes"},
			{`{"name": "Bad Name", "query": "up", "successCondition": {"max": 1}}`, "name", "lower-case"},
		} {
			e := expectInvalid(t, c.body, b.do("POST", "/api/v1/analysis-templates", admin, c.body), c.field)
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("%s: message %q, want %q", c.body, e.Message, c.msg)
			}
		}
		if r := b.do("POST", "/api/v1/analysis-templates", admin, `{"name": "x", "query": "up", "successCondition": {"max": 1}, "threshold": 1}`); r.status != http.StatusBadRequest {
			t.Errorf("unknown field: %d %s", r.status, r.body)
		}

		r = b.do("GET", "/api/v1/analysis-templates/error-rate", viewer, nil)
		expect(t, "get as viewer", r, http.StatusOK)
		var list api.AnalysisTemplateList
		r = b.do("GET", "/api/v1/analysis-templates", viewer, nil)
		expect(t, "list", r, http.StatusOK)
		r.json(t, &list)
		if len(list.Items) != 1 || list.Items[0].Name != "error-rate" {
			t.Fatalf("list %+v", list)
		}
		edit := strings.Replace(errorRateTemplate, `"max": 0.01`, `"max": 0.05`, 1)
		r, _ = a.send("PUT", "/api/v1/analysis-templates/error-rate", admin, edit, http.StatusOK,
			"alice", "analysistemplate.update", "analysisTemplate", "error-rate", "success")
		r.json(t, &got)
		if *got.SuccessCondition.Max != 0.05 || !got.UpdatedAt.After(got.CreatedAt) && !got.UpdatedAt.Equal(got.CreatedAt) {
			t.Fatalf("updated %+v", got)
		}
		a.send("PUT", "/api/v1/analysis-templates/other", admin, edit, http.StatusBadRequest,
			"alice", "analysistemplate.update", "analysisTemplate", "other", "invalid")
		a.send("PUT", "/api/v1/analysis-templates/nope", admin, strings.Replace(edit, `"name": "error-rate",`, "", 1), http.StatusNotFound,
			"alice", "analysistemplate.update", "analysisTemplate", "nope", "invalid")
		a.send("DELETE", "/api/v1/analysis-templates/error-rate", viewer, nil, http.StatusForbidden,
			"victor", "analysistemplate.delete", "route", "/api/v1/analysis-templates/{name}", "denied")
		a.send("DELETE", "/api/v1/analysis-templates/error-rate", admin, nil, http.StatusNoContent,
			"alice", "analysistemplate.delete", "analysisTemplate", "error-rate", "success")
		r, _ = a.send("DELETE", "/api/v1/analysis-templates/error-rate", admin, nil, http.StatusNotFound,
			"alice", "analysistemplate.delete", "analysisTemplate", "error-rate", "invalid")
		if e := r.apiError(t); e.Message != `analysis template "error-rate" not found` {
			t.Errorf("delete twice: %q", e.Message)
		}
		a.check(t)
	})
}

// registerRow stores a cluster row (the API's Prometheus routes need no connection to it).
func registerRow(t *testing.T, b *bundle, name string) {
	t.Helper()
	_, err := b.store.ClusterCreate(context.Background(), &store.ClusterCreateParams{ID: uuid.NewString(), Name: name,
		Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "k", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
}

// A cluster's Prometheus through the API against a real Prometheus (basic auth and TLS in its
// own web config): the settings are checked with a query before they are stored, so a wrong
// password or CA is a 400 saying why; the password is sealed in the store and in no answer;
// GET shows the URL, the auth kind and whether a CA is set; reads for every role, writes for
// Admins, each write audited.
func TestClusterPrometheusAPI(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{BasicAuth: map[string]string{"slipway": "pr0m-s3cret"}, TLS: true})
	other := promtest.Start(t, promtest.Options{TLS: true})
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine)
		a := &auditTrail{b: b}
		admin, viewer := b.admin(), b.viewer()
		registerRow(t, b, "east")
		good := api.PrometheusRequest{URL: prom.URL, Auth: "basic", Username: "slipway", Password: "pr0m-s3cret", CA: string(prom.CAPEM)}

		r := b.do("GET", "/api/v1/clusters/east/prometheus", viewer, nil)
		expect(t, "get before set", r, http.StatusNotFound)
		if e := r.apiError(t); e.Message != "cluster east has no Prometheus configured" {
			t.Errorf("get before set: %q", e.Message)
		}
		expect(t, "unknown cluster", b.do("GET", "/api/v1/clusters/west/prometheus", viewer, nil), http.StatusNotFound)

		wrongPass := good
		wrongPass.Password = "nope"
		r, _ = a.send("PUT", "/api/v1/clusters/east/prometheus", admin, wrongPass, http.StatusBadRequest,
			"alice", "cluster.prometheus.set", "cluster", "east", "invalid")
		if e := r.apiError(t); !strings.Contains(e.Message, "401") {
			t.Errorf("wrong password: %q, want the 401", e.Message)
		}
		wrongCA := good
		wrongCA.CA = string(other.CAPEM)
		r, _ = a.send("PUT", "/api/v1/clusters/east/prometheus", admin, wrongCA, http.StatusBadRequest,
			"alice", "cluster.prometheus.set", "cluster", "east", "invalid")
		if e := r.apiError(t); !strings.Contains(e.Message, "certificate") {
			t.Errorf("wrong CA: %q, want a certificate error", e.Message)
		}
		for _, c := range []struct {
			req   api.PrometheusRequest
			field string
		}{
			{api.PrometheusRequest{URL: "prometheus:9090"}, "url"},
			{api.PrometheusRequest{URL: prom.URL, Auth: "bearer"}, "auth"},
			{api.PrometheusRequest{URL: prom.URL, Auth: "oauth"}, "auth"},
			{api.PrometheusRequest{URL: prom.URL, CA: "not a pem"}, "ca"},
		} {
			expectInvalid(t, c.req.URL+" "+c.req.Auth, b.do("PUT", "/api/v1/clusters/east/prometheus", admin, c.req), c.field)
		}
		a.send("PUT", "/api/v1/clusters/east/prometheus", viewer, good, http.StatusForbidden,
			"victor", "cluster.prometheus.set", "route", "/api/v1/clusters/{name}/prometheus", "denied")
		a.send("PUT", "/api/v1/clusters/west/prometheus", admin, good, http.StatusNotFound,
			"alice", "cluster.prometheus.set", "cluster", "west", "invalid")

		r, _ = a.send("PUT", "/api/v1/clusters/east/prometheus", admin, good, http.StatusOK,
			"alice", "cluster.prometheus.set", "cluster", "east", "success")
		var got api.Prometheus
		r.json(t, &got)
		if got != (api.Prometheus{Cluster: "east", URL: prom.URL, Auth: "basic", CASet: true, CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}) || got.CreatedAt.IsZero() {
			t.Fatalf("set: %+v", got)
		}
		r = b.do("GET", "/api/v1/clusters/east/prometheus", viewer, nil)
		expect(t, "get", r, http.StatusOK)
		row, err := b.store.ClusterPrometheusGet(context.Background(), "east")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(row.SecretCiphertext), "pr0m-s3cret") || row.KeyID == "" {
			t.Fatalf("stored unsealed: %+v", row)
		}
		// What is stored opens and reaches Prometheus: an analysis can run with it.
		cfg, err := analysis.Open(b.srv.sealer, row)
		if err != nil || cfg.Password != "pr0m-s3cret" {
			t.Fatalf("open: %+v %v", cfg, err)
		}
		if strings.Contains(b.bodies.String(), "pr0m-s3cret") {
			t.Fatal("a response holds the password")
		}

		a.send("DELETE", "/api/v1/clusters/east/prometheus", admin, nil, http.StatusNoContent,
			"alice", "cluster.prometheus.delete", "cluster", "east", "success")
		a.send("DELETE", "/api/v1/clusters/east/prometheus", admin, nil, http.StatusNotFound,
			"alice", "cluster.prometheus.delete", "cluster", "east", "invalid")
		a.check(t)
	})
}

// A deployment request's analyses through the API: a stored template with args, or inline;
// refused at the edge with the entry named (unknown template, unknown placeholder, an argument
// that would break out of its PromQL string, a stage the Canary does not have, a cluster with no
// Prometheus); GET /deployments/{id} shows each run's phase and measurements.
func TestDeploymentAnalysesAPI(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine)
		ctx := context.Background()
		admin, olga := b.admin(), b.token("olga", auth.Operator)
		b.addCluster("dev-1", store.EnvironmentDev)
		b.addOperator("widgets", "widget-system", "1.0.0")
		expect(t, "template", b.do("POST", "/api/v1/analysis-templates", admin, errorRateTemplate), http.StatusCreated)
		deploy := func(analyses string) response {
			return b.do("POST", "/api/v1/deployments", olga, `{"operator": "widgets", "version": "1.0.0", "clusters": ["dev-1"],
				"strategy": "Canary", "analyses": `+analyses+`}`)
		}
		e := expectInvalid(t, "no prometheus", deploy(`[{"template": "error-rate"}]`), "analyses")
		if !strings.Contains(e.Message, `cluster "dev-1" has no Prometheus`) {
			t.Errorf("no prometheus: %q", e.Message)
		}
		if _, err := b.store.ClusterPrometheusSet(ctx, &store.ClusterPrometheus{ClusterName: "dev-1", URL: "http://prometheus:9090",
			AuthKind: "none", UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ analyses, field, msg string }{
			{`[{"template": "nope"}]`, "analyses[0].template", `no analysis template "nope"`},
			{`[{"template": "error-rate", "args": [{"name": "floor", "value": "0\"} or vector(1) #"}]}]`, "analyses[0].args", "quotes"},
			{`[{"template": "error-rate", "args": [{"name": "threshold", "value": "1"}]}]`, "analyses[0].args", `unknown argument "threshold"`},
			{`[{"inline": {"name": "x", "query": "up{job=\"{{job}}\"}", "successCondition": {"max": 1}}}]`, "analyses[0].inline.query", "unknown placeholder {{job}}"},
			{`[{"template": "error-rate", "stages": [9]}]`, "analyses[0].stages", "stage 9"},
			{`[{"template": "error-rate"}, {"template": "error-rate"}]`, "analyses[1]", "names are unique"},
			{`[{"template": "error-rate", "inline": {"name": "x", "query": "up", "successCondition": {"max": 1}}}]`, "analyses[0]", "either template"},
		} {
			e := expectInvalid(t, c.analyses, deploy(c.analyses), c.field)
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("%s: %q, want %q", c.analyses, e.Message, c.msg)
			}
		}

		r := deploy(`[{"template": "error-rate", "args": [{"name": "floor", "value": "0.001"}], "stages": [1, 2]},
			{"inline": {"name": "panics", "query": "sum(rate(controller_runtime_reconcile_panics_total{namespace=\"{{namespace}}\"}[5m]))",
			 "successCondition": {"max": 0}}}]`)
		expect(t, "deploy with analyses", r, http.StatusAccepted)
		var d api.Deployment
		r.json(t, &d)
		stored, err := b.store.DeploymentGetByID(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(stored.Analyses), `"template":"error-rate"`) || !strings.Contains(string(stored.Analyses), `"value":"0.001"`) ||
			!strings.Contains(string(stored.Analyses), `"name":"panics"`) {
			t.Fatalf("stored analyses %s", stored.Analyses)
		}
		for i, v := range []float64{0.5, 0.4} {
			v := v
			if _, err := b.store.AnalysisMeasurementInsert(ctx, &store.AnalysisMeasurement{DeploymentID: d.ID, Cluster: "dev-1",
				AnalysisName: "error-rate", Query: "q", Value: &v, Verdict: "Failed", Message: "> max 0.01",
				MeasuredAt: time.Now().Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		r = b.do("GET", "/api/v1/deployments/"+d.ID, b.viewer(), nil)
		expect(t, "get", r, http.StatusOK)
		r.json(t, &d)
		if len(d.AnalysisRuns) != 1 {
			t.Fatalf("analysisRuns %+v", d.AnalysisRuns)
		}
		run := d.AnalysisRuns[0]
		if run.Name != "error-rate" || run.Template != "error-rate" || run.Cluster != "dev-1" || run.Stage != 1 || run.Phase != "Failed" ||
			run.Count != 5 || len(run.Measurements) != 2 || *run.Measurements[1].Value != 0.4 || !strings.Contains(run.Message, "2 of 2 measurements failed") {
			t.Fatalf("run %+v", run)
		}
	})
}
