package request

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// designFleet has the clusters the design's Rolling example names.
var designFleet = []Target{
	{"dev-1", "Dev"}, {"dev-2", "Dev"}, {"staging", "Staging"}, {"prod-us", "Production"}, {"prod-eu", "Production"},
}

// designStrategies are the design's four strategy examples ("Deployment Strategies"), verbatim;
// designBody adds the operator, version and targets they leave out.
var designStrategies = map[api.Strategy]string{
	api.StrategyCanary: `{
  "strategy": "Canary",
  "canaryConfig": {
    "initialPercentage": 10,
    "incrementPercentage": 20,
    "evaluationPeriod": "PT5M",
    "successThreshold": 0.95
  }
}`,
	api.StrategyBlueGreen: `{
  "strategy": "BlueGreen",
  "blueGreenConfig": {
    "blueNamespace": "operators-blue",
    "greenNamespace": "operators-green",
    "validationPeriod": "PT10M",
    "autoSwitch": true
  }
}`,
	api.StrategyRolling: `{
  "strategy": "Rolling",
  "rollingConfig": {
    "clusterOrder": ["dev-1", "dev-2", "staging", "prod-us", "prod-eu"],
    "validationPeriod": "PT5M",
    "pauseBetweenClusters": "PT2M"
  }
}`,
	api.StrategyDirect: `{
  "strategy": "Direct",
  "directConfig": {
    "parallelClusters": 10,
    "skipHealthChecks": false
  }
}`,
}

func designBody(t *testing.T, example string) []byte {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal([]byte(example), &body); err != nil {
		t.Fatal(err)
	}
	body["operator"], body["version"] = "cert-manager", "1.14.0"
	body["environments"] = []string{"Dev", "Staging", "Production"}
	body["values"] = map[string]any{"installCRDs": false, "replicaCount": 2}
	body["valuesByEnvironment"] = map[string]any{"Production": map[string]any{"replicaCount": 3}}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResolveDesignExamples: each of the design's strategy examples decodes and resolves into a
// Spec with the targets sorted, the settings of its strategy only (periods parsed, defaults
// applied), and the values per environment.
func TestResolveDesignExamples(t *testing.T) {
	t.Parallel()
	want := map[api.Strategy]api.Settings{
		api.StrategyCanary:    {Strategy: api.StrategyCanary, Canary: &api.CanarySettings{InitialPercentage: 10, IncrementPercentage: 20, EvaluationPeriod: 5 * time.Minute, SuccessThreshold: 0.95, Stages: []float64{10, 30, 100}}},
		api.StrategyBlueGreen: {Strategy: api.StrategyBlueGreen, BlueGreen: &api.BlueGreenSettings{BlueNamespace: "operators-blue", GreenNamespace: "operators-green", ValidationPeriod: 10 * time.Minute, AutoSwitch: true}},
		api.StrategyRolling: {Strategy: api.StrategyRolling, Rolling: &api.RollingSettings{ClusterOrder: []string{"dev-1", "dev-2", "staging", "prod-us", "prod-eu"},
			ValidationPeriod: 5 * time.Minute, PauseBetweenClusters: 2 * time.Minute}},
		api.StrategyDirect: {Strategy: api.StrategyDirect, Direct: &api.DirectSettings{ParallelClusters: 10}},
	}
	sorted := []Target{{"dev-1", "Dev"}, {"dev-2", "Dev"}, {"staging", "Staging"}, {"prod-eu", "Production"}, {"prod-us", "Production"}}
	for s, example := range designStrategies {
		req, err := api.DecodeDeploymentRequest(designBody(t, example))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		spec, err := Resolve(req, designFleet, Defaults{})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !reflect.DeepEqual(spec.Settings, want[s]) {
			t.Errorf("%s: settings %+v, want %+v", s, spec.Settings, want[s])
		}
		if !reflect.DeepEqual(spec.Targets, sorted) || spec.Operator != "cert-manager" || spec.Version != "1.14.0" {
			t.Errorf("%s: %s %s to %v", s, spec.Operator, spec.Version, spec.Targets)
		}
		prod, err := spec.ValuesFor("Production")
		if err != nil || prod["replicaCount"] != 3.0 || prod["installCRDs"] != false {
			t.Errorf("%s: Production values %v, %v", s, prod, err)
		}
		if dev, err := spec.ValuesFor("Dev"); err != nil || dev["replicaCount"] != 2.0 {
			t.Errorf("%s: Dev values %v, %v", s, dev, err)
		}
	}
}

// TestSpecRoundTrip: a request resolved, stored as the engine stores it (StoreInto, the clusters
// in any order) and rebuilt from the store (FromDeployment) is the same Spec, for every strategy,
// with and without a config, values and values per environment.
func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()
	bodies := []string{
		designCanary,
		canary(`"initialPercentage":10,"stages":[10,30,50,100],"evaluationPeriod":"PT1M"`),
		rolling(`"clusterOrder":["stage-1"],"validationPeriod":"PT1S","pauseBetweenClusters":"PT2S"`),
		blueGreen(`"greenNamespace":"g","autoSwitch":false`),
		direct(`"parallelClusters":2,"skipHealthChecks":true`),
		`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Direct"}`,
		`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Canary","values":null,"valuesByEnvironment":{"Dev":null, "Staging": {"a": {"b": [1, 2]}}}}`,
		`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Direct","bakeWindow":"PT1H30M0.25S"}`,
		`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Direct","bakeWindow":"PT0S"}`,
	}
	for _, ex := range designStrategies {
		bodies = append(bodies, string(designBody(t, ex)))
	}
	for _, body := range bodies {
		req, err := api.DecodeDeploymentRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		known := fleet
		if strings.Contains(body, `"staging"`) {
			known = designFleet
		}
		spec, err := Resolve(req, known, Defaults{BakeWindow: 20 * time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		d := &store.Deployment{ID: "d1"}
		if err := spec.StoreInto(d); err != nil {
			t.Fatal(err)
		}
		for i := len(spec.Targets) - 1; i >= 0; i-- {
			tg := spec.Targets[i]
			d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: tg.Name, Environment: store.Environment(tg.Environment)})
		}
		back, err := FromDeployment(d)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if !reflect.DeepEqual(back, spec) {
			t.Errorf("%s:\nresolved %+v\n rebuilt %+v", body, spec, back)
		}
		for _, env := range Environments {
			a, errA := spec.ValuesFor(env)
			b, errB := back.ValuesFor(env)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("%s: values of %s %v, %v rebuilt as %v, %v", body, env, a, errA, b, errB)
			}
		}
	}
}

// TestFromDeploymentErrors: a stored deployment whose request no longer resolves says which.
func TestFromDeploymentErrors(t *testing.T) {
	t.Parallel()
	for name, d := range map[string]*store.Deployment{
		"unknown field":                 {ID: "d1", Strategy: "Canary", Config: json.RawMessage(`{"initialPercent":1}`)},
		"unknown strategy":              {ID: "d1", Strategy: "BigBang", Config: json.RawMessage(`{}`)},
		"period out of range":           {ID: "d1", Strategy: "Rolling", Config: json.RawMessage(`{"validationPeriod":"P2D"}`)},
		"valuesByEnvironment":           {ID: "d1", Strategy: "Direct", ValuesByEnvironment: json.RawMessage(`[1]`)},
		"parallelClusters out of range": {ID: "d1", Strategy: "Direct", Config: json.RawMessage(`{"parallelClusters":0}`)},
	} {
		if _, err := FromDeployment(d); err == nil || !strings.Contains(err.Error(), "deployment d1") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

// TestResolveBakeWindow: bakeWindow is the effective bake window: the request's (an ISO 8601
// period, PT0S none, kept to the millisecond as the store keeps it), else the default given.
func TestResolveBakeWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		def   time.Duration
		want  time.Duration
	}{
		{``, 15 * time.Minute, 15 * time.Minute},
		{``, 0, 0},
		{`,"bakeWindow":"PT5M"`, 15 * time.Minute, 5 * time.Minute},
		{`,"bakeWindow":"PT0S"`, 15 * time.Minute, 0},
		{`,"bakeWindow":"P1D"`, 0, 24 * time.Hour},
		{`,"bakeWindow":"PT0.0004S"`, time.Hour, 0},
		{`,"bakeWindow":"PT1.2345S"`, 0, 1235 * time.Millisecond},
	} {
		req, err := api.DecodeDeploymentRequest([]byte(`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Direct"` + tc.field + `}`))
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Resolve(req, fleet, Defaults{BakeWindow: tc.def})
		if err != nil || spec.BakeWindow != tc.want {
			t.Errorf("%q with default %s: %v (%v), want %s", tc.field, tc.def, spec, err, tc.want)
		}
	}
}
