package strategy

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
)

// fleetOf is dev Dev, staging Staging and prod Production clusters, named <env>-<i>, listed
// Production first (plans must not depend on the order).
func fleetOf(dev, staging, prod int) []Target {
	var ts []Target
	for _, e := range []struct {
		prefix, env string
		n           int
	}{{"prod", "Production", prod}, {"staging", "Staging", staging}, {"dev", "Dev", dev}} {
		for i := range e.n {
			ts = append(ts, Target{Name: fmt.Sprintf("%s-%d", e.prefix, i+1), Environment: e.env})
		}
	}
	return ts
}

// designRequest is the design's Canary JSON (testdata/design-canary.json, copied from the
// design's "Canary Deployment" section) as the body of a deployment of op 2.0.0 to the
// environments Dev, Staging and Production.
func designRequest(t testing.TB, known []Target) *request.Spec {
	t.Helper()
	raw, err := os.ReadFile("testdata/design-canary.json")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	body["operator"], body["version"], body["environments"] = "op", "2.0.0", []string{"Dev", "Staging", "Production"}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := api.DecodeDeploymentRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := request.Resolve(req, known, request.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestCanary_DesignJSONPlansThreeStages: the design's Canary JSON on 10 clusters of Dev, Staging
// and Production plans the design's three stages: 10 %, 30 % and 100 % of the clusters, taken in
// environment order (then by name), each held for PT5M and judged at 95 %. With 2 Dev, 3
// Staging and 5 Production clusters the stages are exactly the design's "(Dev)", "(Dev +
// Staging)" and "(All environments)".
func TestCanary_DesignJSONPlansThreeStages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dev, staging, prod int
		want               [][]string
	}{
		{4, 3, 3, [][]string{
			{"dev-1"},
			{"dev-2", "dev-3"},
			{"dev-4", "staging-1", "staging-2", "staging-3", "prod-1", "prod-2", "prod-3"},
		}},
		{2, 3, 5, [][]string{
			{"dev-1"},
			{"dev-2", "staging-1"},
			{"staging-2", "staging-3", "prod-1", "prod-2", "prod-3", "prod-4", "prod-5"},
		}},
	} {
		t.Run(fmt.Sprintf("%d-%d-%d", tc.dev, tc.staging, tc.prod), func(t *testing.T) {
			t.Parallel()
			fleet := fleetOf(tc.dev, tc.staging, tc.prod)
			spec := designRequest(t, fleet)
			p, err := NewPlan(spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, spec, fleet, p)
			var got [][]string
			for _, s := range p.Stages {
				got = append(got, s.Clusters)
				if s.Kind != StageInstall || s.Hold != DesignEvaluation || s.SuccessThreshold != 0.95 || s.Parallel != len(s.Clusters) || !s.HealthChecks {
					t.Errorf("stage %d: %s", s.Index, describe(s))
				}
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("stages %v, want %v", got, tc.want)
			}
			if pct := []float64{p.Stages[0].Percentage, p.Stages[1].Percentage, p.Stages[2].Percentage}; !slices.Equal(pct, []float64{10, 30, 100}) {
				t.Errorf("percentages %v, want 10, 30, 100", pct)
			}
			if envs := []string{p.Stages[0].Environment, p.Stages[2].Environment}; !slices.Equal(envs, []string{"Dev", ""}) {
				t.Errorf("environments of stages 1 and 3: %q, want Dev and mixed", envs)
			}
			if p.MinDuration() != 3*DesignEvaluation {
				t.Errorf("MinDuration %s, want three evaluation periods", p.MinDuration())
			}
		})
	}
}

// DesignEvaluation is the design's evaluationPeriod, PT5M.
const DesignEvaluation = api.DefaultEvaluationPeriod

// TestCanary_StageSizes: for every fleet of 1 to 40 clusters over the environments, the
// design's JSON and a stages list plan one stage per percentage whose count ceil(p·N/100) grows,
// each ending exactly at that count, the merged ones (no new cluster) left out; 1 cluster is one
// stage, 2 clusters two stages of one.
func TestCanary_StageSizes(t *testing.T) {
	t.Parallel()
	lists := map[string][]float64{"": {10, 30, 100}, `,"stages":[10,30,50,100]`: {10, 30, 50, 100}, `,"stages":[1,2,3,100]`: {1, 2, 3, 100}}
	for n := 1; n <= 40; n++ {
		fleet := fleetOf((n+2)/3, (n+1)/3, n/3)
		for extra, pcts := range lists {
			body := `"strategy":"Canary","canaryConfig":{"evaluationPeriod":"PT1S"` + extra + `}`
			req, p := plan(t, body, fleet, nil)
			checkPlan(t, req, fleet, p)
			var want []int
			for _, pct := range pcts {
				c := min(max(int(math.Ceil(pct*float64(n)/100-1e-9)), 1), n)
				if len(want) == 0 || c > want[len(want)-1] {
					want = append(want, c)
				}
			}
			var ends []int
			done := 0
			for _, s := range p.Stages {
				done += len(s.Clusters)
				ends = append(ends, done)
			}
			if !slices.Equal(ends, want) {
				t.Errorf("%d clusters, %v: stages end at %v, want %v", n, pcts, ends, want)
			}
			switch {
			case n == 1 && len(p.Stages) != 1:
				t.Errorf("1 cluster: %d stages, want 1", len(p.Stages))
			case n == 2 && (len(p.Stages) != 2 || len(p.Stages[0].Clusters) != 1):
				t.Errorf("2 clusters: %s, want two stages of one", p)
			}
		}
	}
}

// TestCanary_RestageKeepsStoredStages: a Canary deployment stored by an older manager (7 stages
// over 10 clusters, cut at every environment boundary) keeps its stages when re-planned; a plan
// matching the stored stages, and the other strategies, are left as they are; stored stages that
// leave a cluster out or skip an index are errors.
func TestCanary_RestageKeepsStoredStages(t *testing.T) {
	t.Parallel()
	const body = `"strategy":"Canary","canaryConfig":{"initialPercentage":10,"incrementPercentage":20,"evaluationPeriod":"PT5M","successThreshold":95}`
	_, p := plan(t, body, ten, nil)
	old := map[string]int{"dev-1": 0, "dev-2": 1, "dev-3": 1, "stage-1": 2, "stage-2": 2, "stage-3": 3, "prod-1": 4, "prod-2": 5, "prod-3": 5, "prod-4": 6}
	changed, err := p.Restage(old)
	if err != nil || !changed {
		t.Fatalf("Restage = %v, %v; want the stored stages", changed, err)
	}
	var got []string
	for _, s := range p.Stages {
		got = append(got, describe(s))
	}
	want := []string{
		"install Dev dev-1 ×1 10% PT5M/PT0S ≥0.95",
		"install Dev dev-2,dev-3 ×2 30% PT5M/PT0S ≥0.95",
		"install Staging stage-1,stage-2 ×2 50% PT5M/PT0S ≥0.95",
		"install Staging stage-3 ×1 60% PT5M/PT0S ≥0.95",
		"install Production prod-1 ×1 70% PT5M/PT0S ≥0.95",
		"install Production prod-2,prod-3 ×2 90% PT5M/PT0S ≥0.95",
		"install Production prod-4 ×1 100% PT5M/PT0S ≥0.95",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("restaged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, s := range p.Stages {
		if s.Index != i || p.StageOf(s.Clusters[0]) != i {
			t.Fatalf("stage %d numbered %d", i, s.Index)
		}
	}

	req, fresh := plan(t, body, ten, nil)
	current := map[string]int{}
	for _, tg := range ten {
		current[tg.Name] = fresh.StageOf(tg.Name)
	}
	before := fresh.String()
	if changed, err := fresh.Restage(current); changed || err != nil || fresh.String() != before {
		t.Errorf("Restage with the plan's own stages = %v, %v: %s", changed, err, fresh)
	}
	checkPlan(t, req, ten, fresh)
	_, rolling := plan(t, `"strategy":"Rolling"`, ten, nil)
	if changed, err := rolling.Restage(old); changed || err != nil {
		t.Errorf("Restage of a Rolling plan = %v, %v; want it left alone", changed, err)
	}
	missing := maps(old, func(m map[string]int) { delete(m, "prod-4") })
	gap := maps(old, func(m map[string]int) { m["prod-4"] = 8 })
	for name, stored := range map[string]map[string]int{"a cluster without a stage": missing, "a stage without clusters": gap} {
		_, p := plan(t, body, ten, nil)
		if _, err := p.Restage(stored); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// maps is a copy of m changed by fn.
func maps(m map[string]int, fn func(map[string]int)) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	fn(out)
	return out
}
