package analysis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

func s(v string) *string { return &v }

// The brief's example parses into typed values with the defaults applied, and survives a JSON
// round trip (a deployment stores it).
func TestParseExample(t *testing.T) {
	var tm api.Analysis
	err := json.Unmarshal([]byte(`{"name":"error-rate","query":"sum(rate(controller_runtime_reconcile_total{result=\"error\",namespace=\"{{namespace}}\"}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace=\"{{namespace}}\"}[5m])) > {{threshold}}",
	  "successCondition":{"max":0.01,"maxBaselineRatio":1.2},"interval":"PT1M","count":5,"failureLimit":1,"inconclusiveLimit":1,
	  "args":[{"name":"threshold","value":"0.01"}]}`), &tm)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := Parse(tm)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Interval != time.Minute || sp.Count != 5 || sp.FailureLimit != 1 || sp.ConsecutiveErrorLimit != 4 || *sp.Condition.MaxBaselineRatio != 1.2 {
		t.Fatalf("spec %+v", sp)
	}
	b, _ := json.Marshal(sp)
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("round trip: %v (%s)", err, b)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Fatalf("round trip changed it:\n%s\n%s", b, b2)
	}
}

// Each bad template is refused with a message naming the field.
func TestParseRefuses(t *testing.T) {
	ok := api.Analysis{Name: "a", Query: "up", SuccessCondition: api.AnalysisCondition{Max: f(1)}}
	cases := map[string]struct {
		mod  func(*api.Analysis)
		want string
	}{
		"bad name":        {func(t *api.Analysis) { t.Name = "Bad_Name" }, "name"},
		"no query":        {func(t *api.Analysis) { t.Query = " " }, "query: required"},
		"bad promql":      {func(t *api.Analysis) { t.Query = "sum(rate(up[5m])" }, "not valid PromQL"},
		"unknown ph":      {func(t *api.Analysis) { t.Query = `up{job="{{jobb}}"}` }, "unknown placeholder {{jobb}}"},
		"unbalanced":      {func(t *api.Analysis) { t.Query = `up{job="{{job"}` }, "unbalanced"},
		"no condition":    {func(t *api.Analysis) { t.SuccessCondition = api.AnalysisCondition{} }, "successCondition"},
		"min above max":   {func(t *api.Analysis) { t.SuccessCondition.Min = f(2) }, "min 2 is above max 1"},
		"negative ratio":  {func(t *api.Analysis) { t.SuccessCondition.MaxBaselineRatio = f(-1) }, "maxBaselineRatio: must not be negative"},
		"bad interval":    {func(t *api.Analysis) { t.Interval = "5m" }, "interval"},
		"tiny interval":   {func(t *api.Analysis) { t.Interval = "PT0.1S" }, "between PT1S and PT1H"},
		"count":           {func(t *api.Analysis) { t.Count = 1000 }, "count: 1000: must be between"},
		"negative limit":  {func(t *api.Analysis) { t.FailureLimit = -1 }, "must not be negative"},
		"builtin arg":     {func(t *api.Analysis) { t.Args = []api.AnalysisArg{{Name: "namespace"}} }, "built-in"},
		"twice":           {func(t *api.Analysis) { t.Args = []api.AnalysisArg{{Name: "a"}, {Name: "a"}} }, "declared twice"},
		"quote default":   {func(t *api.Analysis) { t.Args = []api.AnalysisArg{{Name: "a", Value: s(`x"} or vector(1) #`)}} }, "quotes"},
		"newline default": {func(t *api.Analysis) { t.Args = []api.AnalysisArg{{Name: "a", Value: s("x\ny")}} }, "control characters"},
	}
	for name, c := range cases {
		tm := ok
		tm.SuccessCondition = api.AnalysisCondition{Max: f(1)}
		c.mod(&tm)
		_, err := Parse(tm)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

// Bind overrides defaults, refuses unknown, built-in and unsafe args and args left without a
// value; Render puts the values in and refuses an unsafe built-in value.
func TestBindRender(t *testing.T) {
	sp := mustParse(t, api.Analysis{Name: "a", Query: `sum(x{ns="{{namespace}}",v="{{version}}",job="{{job}}",le="{{ le }}"})`,
		SuccessCondition: api.AnalysisCondition{Max: f(1)}, Args: []api.AnalysisArg{{Name: "job", Value: s("op")}, {Name: "le"}}})
	if _, err := Bind(sp, nil); err == nil || !strings.Contains(err.Error(), `"le" has no default`) {
		t.Errorf("le unset: %v", err)
	}
	for _, bad := range [][]api.AnalysisArg{
		{{Name: "nope", Value: s("1")}},
		{{Name: "namespace", Value: s("x")}},
		{{Name: "le", Value: s(`1"`)}},
		{{Name: "le", Value: s(`1\`)}},
		{{Name: "le", Value: s("1")}, {Name: "le", Value: s("2")}},
	} {
		if _, err := Bind(sp, bad); err == nil {
			t.Errorf("Bind %+v: no error", bad)
		}
	}
	b, err := Bind(sp, []api.AnalysisArg{{Name: "le", Value: s("0.5")}, {Name: "job", Value: s("other")}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.Render(Builtins{Namespace: "team-a", Version: "1.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `sum(x{ns="team-a",v="1.2.0",job="other",le="0.5"})`; q != want {
		t.Errorf("rendered %s, want %s", q, want)
	}
	if _, err := b.Render(Builtins{Namespace: `a"}`}); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("unsafe built-in: %v", err)
	}
}

// Judge: every bound must hold; a baseline of 0 or none leaves the ratio unjudged.
func TestJudge(t *testing.T) {
	both := api.AnalysisCondition{Max: f(0.01), MaxBaselineRatio: f(1.2)}
	ratioOnly := api.AnalysisCondition{MaxBaselineRatio: f(1.2)}
	cases := []struct {
		name string
		c    api.AnalysisCondition
		v    float64
		base *float64
		want Verdict
		msg  string
	}{
		{"within", both, 0.005, f(0.005), Successful, "within"},
		{"above max", both, 0.02, f(0.02), Failed, "> max 0.01"},
		{"above ratio", both, 0.009, f(0.005), Failed, "> 1.2 × baseline 0.005"},
		{"both", both, 0.5, f(0.1), Failed, "> max 0.01; 0.5 > 1.2 × baseline 0.1"},
		{"zero baseline with max", both, 0.005, f(0), Successful, "baseline is 0"},
		{"zero baseline alone", ratioOnly, 0.005, f(0), Inconclusive, "baseline is 0"},
		{"no baseline alone", ratioOnly, 0.005, nil, Inconclusive, "no data"},
		{"min ratio", api.AnalysisCondition{MinBaselineRatio: f(0.9)}, 80, f(100), Failed, "< 0.9 × baseline 100"},
		{"min", api.AnalysisCondition{Min: f(0.99)}, 0.95, nil, Failed, "< min 0.99"},
		{"inf", api.AnalysisCondition{Max: f(1)}, posInf(), nil, Failed, "+Inf > max 1"},
	}
	for _, c := range cases {
		v, msg := Judge(c.c, c.v, c.base, "baseline: the query returned no data")
		if v != c.want || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, v, msg, c.want, c.msg)
		}
	}
}

func posInf() float64 { var z float64; return 1 / z }

// Evaluate: the phase follows the limits; NextAt schedules Interval apart and stops when done.
func TestEvaluate(t *testing.T) {
	sp := mustParse(t, api.Analysis{Name: "e", Query: "up", SuccessCondition: api.AnalysisCondition{Max: f(1)}, Interval: "PT10S", Count: 3, FailureLimit: 1, InconclusiveLimit: 0})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(v Verdict, i int) Measurement {
		return Measurement{Query: "up", Verdict: v, Message: string(v), Value: f(1), At: t0.Add(time.Duration(i) * 10 * time.Second)}
	}
	cases := []struct {
		ms   []Measurement
		want Phase
	}{
		{nil, Running},
		{[]Measurement{m(Successful, 0), m(Failed, 1)}, Running},
		{[]Measurement{m(Successful, 0), m(Failed, 1), m(Successful, 2)}, PhaseSuccessful},
		{[]Measurement{m(Failed, 0), m(Failed, 1)}, PhaseFailed},
		{[]Measurement{m(Inconclusive, 0)}, PhaseInconclusive},
		{[]Measurement{m(Error, 0), m(Error, 1), m(Error, 2)}, Running}, // errors do not count towards count
		{[]Measurement{m(Error, 0), m(Successful, 1), m(Error, 2), m(Successful, 3), m(Successful, 4)}, PhaseSuccessful},
		{[]Measurement{m(Error, 0), m(Error, 1), m(Error, 2), m(Error, 3), m(Error, 4)}, PhaseError}, // 5 in a row > 4
	}
	for i, c := range cases {
		if got, why := Evaluate(sp, c.ms); got != c.want {
			t.Errorf("case %d: %s (%s), want %s", i, got, why, c.want)
		}
	}
	sp.ConsecutiveErrorLimit = 1
	if got, _ := Evaluate(sp, []Measurement{m(Error, 0), m(Error, 1)}); got != PhaseError {
		t.Errorf("2 errors in a row over limit 1: %s", got)
	}
	if at, ok := NextAt(sp, t0, nil); !ok || !at.Equal(t0) {
		t.Errorf("first at %v %v", at, ok)
	}
	if at, ok := NextAt(sp, t0, []Measurement{m(Successful, 0)}); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Errorf("second at %v %v", at, ok)
	}
	if _, ok := NextAt(sp, t0, []Measurement{m(Failed, 0), m(Failed, 1)}); ok {
		t.Error("a failed run has no next measurement")
	}
	if sp.MinDuration() != 20*time.Second {
		t.Errorf("MinDuration %s", sp.MinDuration())
	}
}

// The client refuses bad configs with a message.
func TestPrometheusValidate(t *testing.T) {
	for _, c := range []struct {
		p    Prometheus
		want string
	}{
		{Prometheus{URL: "ftp://x"}, "http or https"},
		{Prometheus{URL: "https://u:p@x"}, "not in the URL"},
		{Prometheus{URL: "https://x", AuthKind: AuthBearer}, "give a token"},
		{Prometheus{URL: "https://x", AuthKind: AuthBasic, Username: "u"}, "password"},
		{Prometheus{URL: "https://x", AuthKind: "oauth"}, "none, bearer or basic"},
		{Prometheus{URL: "https://x", CAPEM: []byte("junk")}, "no PEM certificate"},
		{Prometheus{URL: "https://x", BearerToken: "t"}, "auth: none: give no token"},
	} {
		if err := c.p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}
