package strategy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
)

var (
	one   = []Target{{Name: "solo", Environment: "Production"}}
	two   = []Target{{Name: "prod-1", Environment: "Production"}, {Name: "dev-1", Environment: "Dev"}}
	three = []Target{{Name: "prod-1", Environment: "Production"}, {Name: "dev-1", Environment: "Dev"}, {Name: "stage-1", Environment: "Staging"}}
	// ten is given out of order: plans must not depend on it.
	ten = []Target{
		{Name: "prod-4", Environment: "Production"}, {Name: "stage-2", Environment: "Staging"}, {Name: "dev-3", Environment: "Dev"}, {Name: "prod-1", Environment: "Production"},
		{Name: "dev-1", Environment: "Dev"}, {Name: "stage-3", Environment: "Staging"}, {Name: "prod-3", Environment: "Production"}, {Name: "dev-2", Environment: "Dev"},
		{Name: "stage-1", Environment: "Staging"}, {Name: "prod-2", Environment: "Production"},
	}
	tenDev = func() []Target {
		var ts []Target
		for i := range 10 {
			ts = append(ts, Target{Name: fmt.Sprintf("dev-%02d", i), Environment: "Dev"})
		}
		return ts
	}()
)

// describe writes a stage as "kind env clusters ×parallel pct% hold/pause threshold [flags]".
func describe(s Stage) string {
	env := s.Environment
	if env == "" {
		env = "*"
	}
	out := fmt.Sprintf("%s %s %s ×%d %v%% %s/%s ≥%v", s.Kind, env, strings.Join(s.Clusters, ","), s.Parallel,
		s.Percentage, api.FormatDuration(s.Hold), api.FormatDuration(s.Pause), s.SuccessThreshold)
	if s.Namespace != "" {
		out += " ns=" + s.Namespace
	}
	if !s.HealthChecks {
		out += " noHealth"
	}
	if s.WaitForSwitch {
		out += " waitForSwitch"
	}
	return out
}

func TestNewPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		body    string // the request's strategy and config
		targets []Target
		opts    *Options
		want    []string
	}{
		// Canary: the design's stages (initial, initial + increment, the rest), or a list.
		{"canary design 10", `"strategy":"Canary","canaryConfig":{"initialPercentage":10,"incrementPercentage":20,"evaluationPeriod":"PT5M","successThreshold":95}`, ten, nil, []string{
			"install Dev dev-1 ×1 10% PT5M/PT0S ≥0.95",
			"install Dev dev-2,dev-3 ×2 30% PT5M/PT0S ≥0.95",
			"install * stage-1,stage-2,stage-3,prod-1,prod-2,prod-3,prod-4 ×7 100% PT5M/PT0S ≥0.95",
		}},
		{"canary design 3: the 30 % stage adds no cluster and is merged", `"strategy":"Canary","canaryConfig":{"initialPercentage":10,"incrementPercentage":20,"evaluationPeriod":"PT5M","successThreshold":0.95}`, three, nil, []string{
			"install Dev dev-1 ×1 33.33% PT5M/PT0S ≥0.95",
			"install * stage-1,prod-1 ×2 100% PT5M/PT0S ≥0.95",
		}},
		{"canary 2: one cluster, then the other", `"strategy":"Canary"`, two, nil, []string{
			"install Dev dev-1 ×1 50% PT5M/PT0S ≥0.95",
			"install Production prod-1 ×1 100% PT5M/PT0S ≥0.95",
		}},
		{"canary 1: one stage", `"strategy":"Canary","canaryConfig":{"evaluationPeriod":"PT2S"}`, one, nil, []string{
			"install Production solo ×1 100% PT2S/PT0S ≥0.95",
		}},
		{"canary defaults 10 in one environment", `"strategy":"Canary"`, tenDev, nil, []string{
			"install Dev dev-00 ×1 10% PT5M/PT0S ≥0.95",
			"install Dev dev-01,dev-02 ×2 30% PT5M/PT0S ≥0.95",
			"install Dev dev-03,dev-04,dev-05,dev-06,dev-07,dev-08,dev-09 ×7 100% PT5M/PT0S ≥0.95",
		}},
		{"canary halves 10", `"strategy":"Canary","canaryConfig":{"initialPercentage":50,"incrementPercentage":50,"successThreshold":1}`, ten, nil, []string{
			"install * dev-1,dev-2,dev-3,stage-1,stage-2 ×5 50% PT5M/PT0S ≥1",
			"install * stage-3,prod-1,prod-2,prod-3,prod-4 ×5 100% PT5M/PT0S ≥1",
		}},
		{"canary 100 % is one stage", `"strategy":"Canary","canaryConfig":{"initialPercentage":100,"evaluationPeriod":"PT0S"}`, ten, nil, []string{
			"install * dev-1,dev-2,dev-3,stage-1,stage-2,stage-3,prod-1,prod-2,prod-3,prod-4 ×10 100% PT0S/PT0S ≥0.95",
		}},
		{"canary tiny percentages: at least one cluster", `"strategy":"Canary","canaryConfig":{"initialPercentage":0.001,"incrementPercentage":0.001}`, three, nil, []string{
			"install Dev dev-1 ×1 33.33% PT5M/PT0S ≥0.95",
			"install * stage-1,prod-1 ×2 100% PT5M/PT0S ≥0.95",
		}},
		{"canary stages list 10", `"strategy":"Canary","canaryConfig":{"initialPercentage":10,"incrementPercentage":20,"stages":[10,30,50,100],"evaluationPeriod":"PT1M"}`, ten, nil, []string{
			"install Dev dev-1 ×1 10% PT1M/PT0S ≥0.95",
			"install Dev dev-2,dev-3 ×2 30% PT1M/PT0S ≥0.95",
			"install Staging stage-1,stage-2 ×2 50% PT1M/PT0S ≥0.95",
			"install * stage-3,prod-1,prod-2,prod-3,prod-4 ×5 100% PT1M/PT0S ≥0.95",
		}},
		{"canary stages list 3: the 75 % stage is merged", `"strategy":"Canary","canaryConfig":{"stages":[25,50,75,100]}`, three, nil, []string{
			"install Dev dev-1 ×1 33.33% PT5M/PT0S ≥0.95",
			"install Staging stage-1 ×1 66.67% PT5M/PT0S ≥0.95",
			"install Production prod-1 ×1 100% PT5M/PT0S ≥0.95",
		}},
		{"canary stages list 2", `"strategy":"Canary","canaryConfig":{"stages":[10,30,50,100]}`, two, nil, []string{
			"install Dev dev-1 ×1 50% PT5M/PT0S ≥0.95",
			"install Production prod-1 ×1 100% PT5M/PT0S ≥0.95",
		}},
		// Rolling.
		{"rolling 10 default order", `"strategy":"Rolling","rollingConfig":{"validationPeriod":"PT1S","pauseBetweenClusters":"PT2S"}`, ten, nil, []string{
			"install Dev dev-1 ×1 10% PT1S/PT2S ≥1",
			"install Dev dev-2 ×1 20% PT1S/PT2S ≥1",
			"install Dev dev-3 ×1 30% PT1S/PT2S ≥1",
			"install Staging stage-1 ×1 40% PT1S/PT2S ≥1",
			"install Staging stage-2 ×1 50% PT1S/PT2S ≥1",
			"install Staging stage-3 ×1 60% PT1S/PT2S ≥1",
			"install Production prod-1 ×1 70% PT1S/PT2S ≥1",
			"install Production prod-2 ×1 80% PT1S/PT2S ≥1",
			"install Production prod-3 ×1 90% PT1S/PT2S ≥1",
			"install Production prod-4 ×1 100% PT1S/PT0S ≥1", // no pause after the last
		}},
		{"rolling 3 with clusterOrder", `"strategy":"Rolling","rollingConfig":{"clusterOrder":["prod-1","dev-1"],"validationPeriod":"PT0S"}`, three, nil, []string{
			"install Production prod-1 ×1 33.33% PT0S/PT0S ≥1",
			"install Dev dev-1 ×1 66.67% PT0S/PT0S ≥1",
			"install Staging stage-1 ×1 100% PT0S/PT0S ≥1",
		}},
		{"rolling 1 defaults", `"strategy":"Rolling"`, one, nil, []string{
			"install Production solo ×1 100% PT5M/PT0S ≥1",
		}},
		// Direct.
		{"direct 10 three at a time", `"strategy":"Direct","directConfig":{"parallelClusters":3}`, ten, nil, []string{
			"install * dev-1,dev-2,dev-3,stage-1,stage-2,stage-3,prod-1,prod-2,prod-3,prod-4 ×3 100% PT0S/PT0S ≥1",
		}},
		{"direct 3 defaults: all at once", `"strategy":"Direct"`, three, nil, []string{
			"install * dev-1,stage-1,prod-1 ×3 100% PT0S/PT0S ≥1",
		}},
		{"direct 1 more parallel than clusters, no health", `"strategy":"Direct","directConfig":{"parallelClusters":50,"skipHealthChecks":true}`, one, nil, []string{
			"install Production solo ×1 100% PT0S/PT0S ≥1 noHealth",
		}},
		// BlueGreen.
		{"bluegreen 10 manual switch", `"strategy":"BlueGreen","blueGreenConfig":{"blueNamespace":"op-blue","greenNamespace":"op-green","validationPeriod":"PT10M","autoSwitch":false}`, ten, nil, []string{
			"install Dev dev-1,dev-2,dev-3 ×3 30% PT10M/PT0S ≥1 ns=op-green",
			"install Staging stage-1,stage-2,stage-3 ×3 60% PT10M/PT0S ≥1 ns=op-green",
			"install Production prod-1,prod-2,prod-3,prod-4 ×4 100% PT10M/PT0S ≥1 ns=op-green",
			"switch * dev-1,dev-2,dev-3,stage-1,stage-2,stage-3,prod-1,prod-2,prod-3,prod-4 ×10 100% PT5M/PT0S ≥1 ns=op-green waitForSwitch",
		}},
		{"bluegreen 3 defaults", `"strategy":"BlueGreen"`, three, &Options{OperatorNamespace: "ops", SwitchMonitor: time.Second}, []string{
			"install Dev dev-1 ×1 33.33% PT5M/PT0S ≥1 ns=ops-green",
			"install Staging stage-1 ×1 66.67% PT5M/PT0S ≥1 ns=ops-green",
			"install Production prod-1 ×1 100% PT5M/PT0S ≥1 ns=ops-green",
			"switch * dev-1,stage-1,prod-1 ×3 100% PT1S/PT0S ≥1 ns=ops-green",
		}},
		{"bluegreen 1", `"strategy":"BlueGreen","blueGreenConfig":{"validationPeriod":"PT3S"}`, one, &Options{OperatorNamespace: "ops"}, []string{
			"install Production solo ×1 100% PT3S/PT0S ≥1 ns=ops-green",
			"switch Production solo ×1 100% PT5M/PT0S ≥1 ns=ops-green",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, plan := plan(t, tc.body, tc.targets, tc.opts)
			var got []string
			for _, s := range plan.Stages {
				got = append(got, describe(s))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("stages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			checkPlan(t, req, tc.targets, plan)
			// Deterministic: the reversed targets give the same plan.
			rev := slices.Clone(tc.targets)
			slices.Reverse(rev)
			again, err := NewPlan(&request.Spec{Targets: rev, Settings: req.Settings}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if again.String() != plan.String() {
				t.Errorf("plan depends on the order of the targets:\n%s\n%s", plan, again)
			}
		})
	}
}

// plan decodes and validates a request with body's strategy part over targets, and plans it.
func plan(t testing.TB, body string, targets []Target, opts *Options) (*request.Spec, *Plan) {
	t.Helper()
	var ns []string
	for _, tg := range targets {
		ns = append(ns, tg.Name)
	}
	clusters, _ := json.Marshal(ns)
	req, err := api.DecodeDeploymentRequest([]byte(`{"operator":"op","version":"2.0.0","clusters":` + string(clusters) + `,` + body + `}`))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := request.Resolve(req, targets, request.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	return spec, p
}

// checkPlan asserts what holds for every plan: each target is installed by exactly one install
// stage; stages are numbered, non-empty, with 1 ≤ Parallel ≤ len(Clusters); percentages rise to
// 100; a stage's Environment is its clusters' when they share one ("" otherwise); Rolling and
// BlueGreen stages never mix environments; Canary and BlueGreen visit them in promotion order
// (Canary: the sorted targets, cut into stages); the switch stage comes last and covers every
// cluster.
func checkPlan(t testing.TB, req *request.Spec, targets []Target, p *Plan) {
	t.Helper()
	env := map[string]string{}
	for _, tg := range targets {
		env[tg.Name] = tg.Environment
	}
	installed := map[string]int{}
	lastPct, lastRank := 0.0, 0
	for i, s := range p.Stages {
		if s.Index != i || len(s.Clusters) == 0 || s.Parallel < 1 || s.Parallel > len(s.Clusters) {
			t.Fatalf("stage %d malformed: %+v", i, s)
		}
		if s.Percentage < lastPct || s.Percentage > 100 {
			t.Fatalf("stage %d: percentage %v after %v", i, s.Percentage, lastPct)
		}
		lastPct = s.Percentage
		if s.Hold < 0 || s.Pause < 0 || s.SuccessThreshold <= 0 || s.SuccessThreshold > 1 {
			t.Fatalf("stage %d: hold %v pause %v threshold %v", i, s.Hold, s.Pause, s.SuccessThreshold)
		}
		if s.Kind == StageSwitch {
			if i != len(p.Stages)-1 || len(s.Clusters) != len(targets) || p.Strategy != api.StrategyBlueGreen {
				t.Fatalf("switch stage %d of %d over %d clusters", i, len(p.Stages), len(s.Clusters))
			}
			continue
		}
		mixed := false
		for _, c := range s.Clusters {
			installed[c]++
			mixed = mixed || env[c] != env[s.Clusters[0]]
			if e := env[c]; (p.Strategy == api.StrategyRolling || p.Strategy == api.StrategyBlueGreen) && e != s.Environment {
				t.Fatalf("stage %d (%s) holds %s of %s", i, s.Environment, c, e)
			}
			if p.Strategy == api.StrategyCanary || p.Strategy == api.StrategyBlueGreen {
				if r := request.EnvironmentRank(env[c]); r < lastRank {
					t.Fatalf("stage %d: %s (%s) after a later environment", i, c, env[c])
				} else {
					lastRank = r
				}
			}
		}
		if want := env[s.Clusters[0]]; mixed && s.Environment != "" || !mixed && s.Environment != want {
			t.Fatalf("stage %d: environment %q over %v", i, s.Environment, s.Clusters)
		}
		if p.Strategy == api.StrategyCanary {
			for j, c := range s.Clusters {
				if k := len(installed) - len(s.Clusters) + j; p.Targets[k].Name != c {
					t.Fatalf("stage %d: %s where the sorted targets have %s", i, c, p.Targets[k].Name)
				}
			}
		}
		if p.StageOf(s.Clusters[0]) != i {
			t.Fatalf("StageOf(%s) = %d, want %d", s.Clusters[0], p.StageOf(s.Clusters[0]), i)
		}
	}
	if lastPct != 100 {
		t.Fatalf("plan ends at %v%%", lastPct)
	}
	for _, tg := range targets {
		if installed[tg.Name] != 1 {
			t.Fatalf("%s installed by %d stages", tg.Name, installed[tg.Name])
		}
	}
	if len(installed) != len(targets) {
		t.Fatalf("%d clusters installed, %d targets", len(installed), len(targets))
	}
	if p.Strategy != req.Strategy {
		t.Fatalf("strategy %s, want %s", p.Strategy, req.Strategy)
	}
}

func TestStagePassed(t *testing.T) {
	t.Parallel()
	s := Stage{Clusters: make([]string, 20), HealthChecks: true, SuccessThreshold: 0.95}
	if !s.Passed(19) || s.Passed(18) {
		t.Error("0.95 of 20: 19 passes, 18 fails")
	}
	s = Stage{Clusters: make([]string, 3), HealthChecks: true, SuccessThreshold: 0.95}
	if !s.Passed(3) || s.Passed(2) {
		t.Error("0.95 of 3: all 3 needed")
	}
	s = Stage{Clusters: make([]string, 10), HealthChecks: true, SuccessThreshold: 0.7}
	if !s.Passed(7) || s.Passed(6) {
		t.Error("0.7 of 10: 7 passes (no floating-point miss), 6 fails")
	}
	s = Stage{Clusters: make([]string, 2), SuccessThreshold: 1}
	if !s.Passed(0) {
		t.Error("a stage without health checks passes")
	}
}

func TestPlanDurations(t *testing.T) {
	t.Parallel()
	_, p := plan(t, `"strategy":"Rolling","rollingConfig":{"validationPeriod":"PT1S","pauseBetweenClusters":"PT0.5S"}`, three, nil)
	if got, want := p.MinDuration(), 3*time.Second+2*500*time.Millisecond; got != want {
		t.Errorf("MinDuration = %v, want %v", got, want)
	}
	if p.Stages[0].Hold != time.Second || p.Stages[0].Pause != 500*time.Millisecond {
		t.Errorf("stage 0: hold %v pause %v", p.Stages[0].Hold, p.Stages[0].Pause)
	}
}

func TestNewPlanErrors(t *testing.T) {
	t.Parallel()
	direct := api.Settings{Strategy: api.StrategyDirect, Direct: &api.DirectSettings{}}
	for _, tc := range []struct {
		name     string
		settings api.Settings
		targets  []Target
		field    string
	}{
		{"no targets", direct, nil, "clusters"},
		{"target twice", direct, []Target{{Name: "a", Environment: "Dev"}, {Name: "a", Environment: "Dev"}}, "clusters"},
		{"unknown strategy", api.Settings{Strategy: "Big"}, one, "strategy"},
		{"settings of another strategy", api.Settings{Strategy: api.StrategyCanary, Direct: &api.DirectSettings{}}, one, "strategy"},
		{"clusterOrder outside targets", api.Settings{Strategy: api.StrategyRolling, Rolling: &api.RollingSettings{ClusterOrder: []string{"x"}}}, one, "rollingConfig.clusterOrder[0]"},
		{"green is blue", api.Settings{Strategy: api.StrategyBlueGreen, BlueGreen: &api.BlueGreenSettings{GreenNamespace: "ops"}}, one, "blueGreenConfig.greenNamespace"},
	} {
		_, err := NewPlan(&request.Spec{Targets: tc.targets, Settings: tc.settings}, &Options{OperatorNamespace: "ops"})
		if e, ok := invalid.As(err); !ok || e.Field != tc.field {
			t.Errorf("%s: error %v, want *invalid.Error on %q", tc.name, err, tc.field)
		}
	}
}

// BenchmarkNewPlan plans a canary over 1000 clusters in three environments.
func BenchmarkNewPlan(b *testing.B) {
	var targets []Target
	var names []string
	for i := range 1000 {
		t := Target{Name: fmt.Sprintf("c-%04d", i), Environment: request.Environments[i%3]}
		targets = append(targets, t)
		names = append(names, t.Name)
	}
	req := &api.DeploymentRequest{Operator: "op", Version: "1", Clusters: names, Strategy: api.StrategyCanary,
		CanaryConfig: &api.CanaryConfig{InitialPercentage: ptr(1.0), IncrementPercentage: ptr(1.0)}}
	for b.Loop() {
		spec, err := request.Resolve(req, targets, request.Defaults{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := NewPlan(spec, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
