package analysis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis/promtest"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// errorRate is the design's operator error rate over a short window (the tests scrape every second).
const errorRate = `sum(rate(controller_runtime_reconcile_total{result="error",namespace="{{namespace}}"}[5s])) / sum(rate(controller_runtime_reconcile_total{namespace="{{namespace}}"}[5s]))`

func mustParse(t testing.TB, tm api.Analysis) Spec {
	t.Helper()
	s, err := Parse(tm)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func f(v float64) *float64 { return &v }

// measure renders s for namespace and measures it now against p.
func measure(t testing.TB, p Prometheus, s Spec, ns string, baselineAt time.Time) Measurement {
	t.Helper()
	api, err := p.Client()
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.Render(Builtins{Namespace: ns, Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	return Measure(context.Background(), api, q, s.Condition, baselineAt, time.Now())
}

// waitScraped drives c until Prometheus has samples of its reconciles over a whole window.
func driveWindow(cs map[*promtest.Controller]float64, d time.Duration) {
	done := make(chan struct{})
	for c, ratio := range cs {
		go func() { c.Drive(d, 100, ratio); done <- struct{}{} }()
	}
	for range cs {
		<-done
	}
}

// Against a real Prometheus scraping real controller-runtime controllers: an error rate under
// the threshold passes, one above fails with the value in the message; no data and NaN are
// Inconclusive; several series and a query Prometheus refuses are Errors.
func TestMeasureThresholdRealPrometheus(t *testing.T) {
	good := promtest.NewController(t, "an-good", map[string]string{"namespace": "ns-good"})
	bad := promtest.NewController(t, "an-bad", map[string]string{"namespace": "ns-bad"})
	idle := promtest.NewController(t, "an-idle", map[string]string{"namespace": "ns-idle"})
	srv := promtest.Start(t, promtest.Options{Targets: []promtest.Target{good.Target, bad.Target, idle.Target}})
	driveWindow(map[*promtest.Controller]float64{good: 0, bad: 0.5}, 7*time.Second)
	p := Prometheus{URL: srv.URL}
	s := mustParse(t, api.Analysis{Name: "error-rate", Query: errorRate, SuccessCondition: api.AnalysisCondition{Max: f(0.01)}})

	m := measure(t, p, s, "ns-good", time.Time{})
	if m.Verdict != Successful || m.Value == nil || *m.Value != 0 {
		t.Errorf("good: %+v, want Successful with 0", m)
	}
	if !strings.Contains(m.Query, `namespace="ns-good"`) {
		t.Errorf("rendered query %q does not name the namespace", m.Query)
	}
	m = measure(t, p, s, "ns-bad", time.Time{})
	if m.Verdict != Failed || m.Value == nil || *m.Value < 0.3 || *m.Value > 0.7 || !strings.Contains(m.Message, "> max 0.01") {
		t.Errorf("bad: %+v, want Failed near 0.5", m)
	}
	m = measure(t, p, s, "ns-nowhere", time.Time{})
	if m.Verdict != Inconclusive || m.Value != nil || !strings.Contains(m.Message, "no data") {
		t.Errorf("no data: %+v, want Inconclusive, no data", m)
	}
	m = measure(t, p, s, "ns-idle", time.Time{})
	if m.Verdict != Inconclusive || !strings.Contains(m.Message, "NaN") {
		t.Errorf("idle controller (0/0): %+v, want Inconclusive NaN", m)
	}
	several := mustParse(t, api.Analysis{Name: "several", Query: `controller_runtime_reconcile_total{namespace="{{namespace}}"}`, SuccessCondition: api.AnalysisCondition{Max: f(1)}})
	m = measure(t, p, several, "ns-bad", time.Time{})
	if m.Verdict != Error || !strings.Contains(m.Message, "series") || !strings.Contains(m.Message, "aggregate") {
		t.Errorf("several series: %+v, want Error naming the series", m)
	}
	// Valid for the parser, refused by Prometheus when it runs it (the regular expression).
	refused := mustParse(t, api.Analysis{Name: "refused", Query: `label_replace(vector(1), "a", "$1", "b", "(")`, SuccessCondition: api.AnalysisCondition{Max: f(1)}})
	m = measure(t, p, refused, "ns-bad", time.Time{})
	if m.Verdict != Error || !strings.Contains(m.Message, "prometheus refused the query") {
		t.Errorf("refused query: %+v, want Error from prometheus", m)
	}
}

// The baseline comparison against a real Prometheus: the same error rate before the
// deployment's start and now passes "≤ 1.2 × baseline"; a rate five times higher fails it.
func TestMeasureBaselineRealPrometheus(t *testing.T) {
	steady := promtest.NewController(t, "an-steady", map[string]string{"namespace": "ns-steady"})
	worse := promtest.NewController(t, "an-worse", map[string]string{"namespace": "ns-worse"})
	srv := promtest.Start(t, promtest.Options{Targets: []promtest.Target{steady.Target, worse.Target}})
	driveWindow(map[*promtest.Controller]float64{steady: 0.1, worse: 0.1}, 7*time.Second)
	start := time.Now()
	driveWindow(map[*promtest.Controller]float64{steady: 0.1, worse: 0.5}, 7*time.Second)
	p := Prometheus{URL: srv.URL}
	s := mustParse(t, api.Analysis{Name: "error-rate", Query: errorRate, SuccessCondition: api.AnalysisCondition{Max: f(0.9), MaxBaselineRatio: f(1.2)}})

	m := measure(t, p, s, "ns-steady", start)
	if m.Verdict != Successful || m.BaselineValue == nil || *m.BaselineValue < 0.05 || *m.BaselineValue > 0.15 {
		t.Errorf("steady: %+v (baseline %v), want Successful with a baseline near 0.1", m, deref(m.BaselineValue))
	}
	m = measure(t, p, s, "ns-worse", start)
	if m.Verdict != Failed || m.BaselineValue == nil || !strings.Contains(m.Message, "× baseline") {
		t.Errorf("worse: %+v (baseline %v), want Failed on the baseline ratio", m, deref(m.BaselineValue))
	}
	// Before anything was scraped there is no baseline: the ratio is not judged, max decides.
	m = measure(t, p, s, "ns-worse", start.Add(-time.Hour))
	if m.Verdict != Successful || m.BaselineValue != nil || !strings.Contains(m.Message, "not judged") {
		t.Errorf("no baseline: %+v, want Successful by max alone, saying the ratio is not judged", m)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Auth against Prometheus's own web config (basic auth, TLS): the right credentials and CA
// pass, a wrong password is refused by Prometheus, a wrong CA by TLS; a bearer token through a
// reverse proxy that checks it.
func TestClientAuthRealPrometheus(t *testing.T) {
	srv := promtest.Start(t, promtest.Options{BasicAuth: map[string]string{"slipway": "pw"}, TLS: true})
	s := mustParse(t, api.Analysis{Name: "one", Query: `vector(1)`, SuccessCondition: api.AnalysisCondition{Max: f(1)}})
	other := promtest.Start(t, promtest.Options{TLS: true}) // its certificate is not srv's

	cases := []struct {
		name string
		p    Prometheus
		want Verdict
		msg  string
	}{
		{"basic", Prometheus{URL: srv.URL, AuthKind: AuthBasic, Username: "slipway", Password: "pw", CAPEM: srv.CAPEM}, Successful, ""},
		{"wrong password", Prometheus{URL: srv.URL, AuthKind: AuthBasic, Username: "slipway", Password: "no", CAPEM: srv.CAPEM}, Error, "401"},
		{"no credentials", Prometheus{URL: srv.URL, CAPEM: srv.CAPEM}, Error, "401"},
		{"wrong CA", Prometheus{URL: srv.URL, AuthKind: AuthBasic, Username: "slipway", Password: "pw", CAPEM: other.CAPEM}, Error, "certificate"},
		{"system roots", Prometheus{URL: srv.URL, AuthKind: AuthBasic, Username: "slipway", Password: "pw"}, Error, "certificate"},
	}
	proxyURL, proxyCA := other.BearerProxy(t, "tok-1")
	cases = append(cases,
		struct {
			name string
			p    Prometheus
			want Verdict
			msg  string
		}{"bearer", Prometheus{URL: proxyURL, AuthKind: AuthBearer, BearerToken: "tok-1", CAPEM: proxyCA}, Successful, ""},
		struct {
			name string
			p    Prometheus
			want Verdict
			msg  string
		}{"wrong bearer", Prometheus{URL: proxyURL, AuthKind: AuthBearer, BearerToken: "tok-2", CAPEM: proxyCA}, Error, "401"},
	)
	for _, c := range cases {
		m := measure(t, c.p, s, "ns", time.Time{})
		if m.Verdict != c.want || !strings.Contains(m.Message, c.msg) {
			t.Errorf("%s: %s %q, want %s containing %q", c.name, m.Verdict, m.Message, c.want, c.msg)
		}
	}
}

// BenchmarkMeasureRealPrometheus is one measurement (with the baseline query) of the error rate
// against a real Prometheus; it reports p50 and p99.
func BenchmarkMeasureRealPrometheus(b *testing.B) {
	c := promtest.NewController(b, "an-bench", map[string]string{"namespace": "ns-bench"})
	srv := promtest.Start(b, promtest.Options{Targets: []promtest.Target{c.Target}})
	driveWindow(map[*promtest.Controller]float64{c: 0.1}, 6*time.Second)
	s := mustParse(b, api.Analysis{Name: "error-rate", Query: errorRate, SuccessCondition: api.AnalysisCondition{Max: f(0.5), MaxBaselineRatio: f(1.2)}})
	api, err := Prometheus{URL: srv.URL}.Client()
	if err != nil {
		b.Fatal(err)
	}
	q, _ := s.Render(Builtins{Namespace: "ns-bench"})
	start := time.Now().Add(-2 * time.Second)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		m := Measure(context.Background(), api, q, s.Condition, start, time.Now())
		lat = append(lat, time.Since(t0))
		if m.Verdict != Successful {
			b.Fatalf("measurement %d: %+v", i, m)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}
