package request

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// fleet is the registered clusters of these tests.
var fleet = []Target{
	{"prod-us", "Production"}, {"dev-1", "Dev"}, {"stage-1", "Staging"},
	{"prod-eu", "Production"}, {"dev-2", "Dev"},
}

// designCanary is the design's example request, as a script would send it.
const designCanary = `{
  "operator": "cert-manager",
  "version": "1.14.0",
  "environments": ["Dev", "Staging", "Production"],
  "values": {"installCRDs": false, "replicaCount": 2},
  "valuesByEnvironment": {"Production": {"replicaCount": 3}},
  "strategy": "Canary",
  "canaryConfig": {
    "initialPercentage": 10,
    "incrementPercentage": 20,
    "evaluationPeriod": "PT5M",
    "successThreshold": 95
  }
}`

func TestDesignRequest(t *testing.T) {
	t.Parallel()
	req, err := api.DecodeDeploymentRequest([]byte(designCanary))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Resolve(req, fleet, Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{"dev-1", "Dev"}, {"dev-2", "Dev"}, {"stage-1", "Staging"}, {"prod-eu", "Production"}, {"prod-us", "Production"}}
	if !reflect.DeepEqual(spec.Targets, want) {
		t.Errorf("targets = %v, want %v", spec.Targets, want)
	}
	if c := spec.Canary; c == nil || !reflect.DeepEqual(*c, api.CanarySettings{InitialPercentage: 10, IncrementPercentage: 20, EvaluationPeriod: 5 * time.Minute, SuccessThreshold: 0.95, Stages: []float64{10, 30, 100}}) {
		t.Errorf("canary = %+v", c)
	}
	// The request encodes back to the same JSON (field names as the design writes them).
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(designCanary), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip:\n got %s\nwant %s", out, designCanary)
	}
}

func TestStrategyConfigsAsDesignWritesThem(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"operator":"op","version":"2.0.0","clusters":["prod-eu"],"strategy":"BlueGreen",
		  "blueGreenConfig":{"blueNamespace":"op-blue","greenNamespace":"op-green","validationPeriod":"PT10M","autoSwitch":false}}`,
		`{"operator":"op","version":"2.0.0","clusters":["dev-1","prod-eu"],"strategy":"Rolling",
		  "rollingConfig":{"clusterOrder":["prod-eu","dev-1"],"validationPeriod":"PT5M","pauseBetweenClusters":"PT1M"}}`,
		`{"operator":"op","version":"2.0.0","environments":["Dev"],"strategy":"Direct",
		  "directConfig":{"parallelClusters":5,"skipHealthChecks":true}}`,
		`{"operator":"op","version":"2.0.0","environments":["Dev"],"strategy":"Canary",
		  "canaryConfig":{"initialPercentage":25,"incrementPercentage":25,"evaluationPeriod":"PT2S","successThreshold":0.9}}`,
	} {
		req, err := api.DecodeDeploymentRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if err := resolveErr(req, fleet); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestResolveDefaults(t *testing.T) {
	t.Parallel()
	settings := func(r *api.DeploymentRequest) api.Settings {
		t.Helper()
		s, err := api.ResolveSettings(r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		return s
	}
	c := settings(&api.DeploymentRequest{Strategy: api.StrategyCanary}).Canary
	if !reflect.DeepEqual(*c, api.CanarySettings{InitialPercentage: 10, IncrementPercentage: 20, EvaluationPeriod: 5 * time.Minute, SuccessThreshold: 0.95, Stages: []float64{10, 30, 100}}) {
		t.Errorf("canary defaults = %+v", c)
	}
	c = settings(&api.DeploymentRequest{Strategy: api.StrategyCanary, CanaryConfig: &api.CanaryConfig{SuccessThreshold: ptr(1.0)}}).Canary
	if c.SuccessThreshold != 1 || c.InitialPercentage != 10 {
		t.Errorf("successThreshold 1 = %+v", c)
	}
	c = settings(&api.DeploymentRequest{Strategy: api.StrategyCanary, CanaryConfig: &api.CanaryConfig{SuccessThreshold: ptr(100.0)}}).Canary
	if c.SuccessThreshold != 1 {
		t.Errorf("successThreshold 100 = %+v", c)
	}
	bg := *settings(&api.DeploymentRequest{Strategy: api.StrategyBlueGreen}).BlueGreen
	if bg != (api.BlueGreenSettings{ValidationPeriod: 5 * time.Minute, AutoSwitch: true}) {
		t.Errorf("blueGreen defaults = %+v", bg)
	}
	blue, green, err := bg.Namespaces("cert-manager")
	if err != nil || blue != "cert-manager" || green != "cert-manager-green" {
		t.Errorf("namespaces = %q, %q, %v", blue, green, err)
	}
	long := strings.Repeat("a", 62) + "-"
	long = long[:63]
	if _, green, err := bg.Namespaces(long); err != nil || len(green) > 63 || !strings.HasSuffix(green, "-green") {
		t.Errorf("namespaces of a 63-character blue = %q, %v", green, err)
	}
	if _, _, err := (api.BlueGreenSettings{GreenNamespace: "ops"}).Namespaces("ops"); fieldOf(err) != "blueGreenConfig.greenNamespace" {
		t.Errorf("green = operator namespace: %v", err)
	}
	r := settings(&api.DeploymentRequest{Strategy: api.StrategyRolling}).Rolling
	if r.ValidationPeriod != 5*time.Minute || r.PauseBetweenClusters != 0 || r.ClusterOrder != nil {
		t.Errorf("rolling defaults = %+v", r)
	}
	if d := settings(&api.DeploymentRequest{Strategy: api.StrategyDirect}).Direct; *d != (api.DirectSettings{}) {
		t.Errorf("direct defaults = %+v", d)
	}
}

// resolveErr is Resolve's error.
func resolveErr(req *api.DeploymentRequest, known []Target) error {
	_, err := Resolve(req, known, Defaults{})
	return err
}

func ptr[T any](v T) *T { return &v }

func fieldOf(err error) string {
	if e, ok := invalid.As(err); ok {
		return e.Field
	}
	if err == nil {
		return "<nil>"
	}
	return "<not invalid: " + err.Error() + ">"
}

// TestValidate covers every rule: each body is decoded and validated against fleet, and must
// fail on field with reason.
func TestValidate(t *testing.T) {
	t.Parallel()
	const base = `"operator":"op","version":"1.1.0"`
	for _, tc := range []struct {
		name, body, field, reason string
	}{
		// Decoding.
		{"empty body", ``, "", "required"},
		{"not an object", `[]`, "", "format"},
		{"malformed", `{"operator":`, "", "format"},
		{"syntax", `{"operator" "op"}`, "", "format"},
		{"trailing data", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct"} {}`, "", "format"},
		{"unknown field", `{` + base + `,"cluster":["dev-1"],"strategy":"Direct"}`, "cluster", "unknown"},
		{"unknown config field", `{` + base + `,"clusters":["dev-1"],"strategy":"Canary","canaryConfig":{"initialPercent":5}}`, "canaryConfig.initialPercent", "unknown"},
		{"wrong type", `{` + base + `,"clusters":"dev-1","strategy":"Direct"}`, "clusters", "format"},
		{"percentage as string", `{` + base + `,"clusters":["dev-1"],"strategy":"Canary","canaryConfig":{"initialPercentage":"10"}}`, "canaryConfig.initialPercentage", "format"},
		{"parallel not an integer", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct","directConfig":{"parallelClusters":1.5}}`, "directConfig.parallelClusters", "format"},
		// Operator and version.
		{"operator missing", `{"version":"1","clusters":["dev-1"],"strategy":"Direct"}`, "operator", "required"},
		{"version missing", `{"operator":"op","clusters":["dev-1"],"strategy":"Direct"}`, "version", "required"},
		{"version empty", `{"operator":"op","version":"","clusters":["dev-1"],"strategy":"Direct"}`, "version", "required"},
		{"version with space", `{"operator":"op","version":"1.0 ","clusters":["dev-1"],"strategy":"Direct"}`, "version", "format"},
		{"operator too long", `{"operator":"` + strings.Repeat("o", 254) + `","version":"1","clusters":["dev-1"],"strategy":"Direct"}`, "operator", "format"},
		// Targets.
		{"neither", `{` + base + `,"strategy":"Direct"}`, "clusters", "required"},
		{"both", `{` + base + `,"clusters":["dev-1"],"environments":["Dev"],"strategy":"Direct"}`, "environments", "conflict"},
		{"no clusters", `{` + base + `,"clusters":[],"strategy":"Direct"}`, "clusters", "required"},
		{"no environments", `{` + base + `,"environments":[],"strategy":"Direct"}`, "environments", "required"},
		{"unknown cluster", `{` + base + `,"clusters":["dev-1","nope"],"strategy":"Direct"}`, "clusters[1]", "notFound"},
		{"empty cluster name", `{` + base + `,"clusters":["dev-1",""],"strategy":"Direct"}`, "clusters[1]", "required"},
		{"cluster twice", `{` + base + `,"clusters":["dev-1","dev-2","dev-1"],"strategy":"Direct"}`, "clusters[2]", "duplicate"},
		{"unknown environment", `{` + base + `,"environments":["Dev","Prod"],"strategy":"Direct"}`, "environments[1]", "invalid"},
		{"environment lower case", `{` + base + `,"environments":["dev"],"strategy":"Direct"}`, "environments[0]", "invalid"},
		{"environment twice", `{` + base + `,"environments":["Dev","Dev"],"strategy":"Direct"}`, "environments[1]", "duplicate"},
		// Values.
		{"values not an object", `{` + base + `,"clusters":["dev-1"],"values":[1],"strategy":"Direct"}`, "values", "format"},
		{"values a string", `{` + base + `,"clusters":["dev-1"],"values":"a: 1","strategy":"Direct"}`, "values", "format"},
		{"valuesByEnvironment unknown", `{` + base + `,"clusters":["dev-1"],"valuesByEnvironment":{"Prod":{}},"strategy":"Direct"}`, "valuesByEnvironment.Prod", "invalid"},
		{"valuesByEnvironment not an object", `{` + base + `,"clusters":["dev-1"],"valuesByEnvironment":{"Dev":3},"strategy":"Direct"}`, "valuesByEnvironment.Dev", "format"},
		// Strategy and configs.
		{"strategy missing", `{` + base + `,"clusters":["dev-1"]}`, "strategy", "required"},
		{"unknown strategy", `{` + base + `,"clusters":["dev-1"],"strategy":"BigBang"}`, "strategy", "invalid"},
		{"strategy lower case", `{` + base + `,"clusters":["dev-1"],"strategy":"canary"}`, "strategy", "invalid"},
		{"canaryConfig with Rolling", `{` + base + `,"clusters":["dev-1"],"strategy":"Rolling","canaryConfig":{}}`, "canaryConfig", "conflict"},
		{"blueGreenConfig with Canary", `{` + base + `,"clusters":["dev-1"],"strategy":"Canary","blueGreenConfig":{}}`, "blueGreenConfig", "conflict"},
		{"rollingConfig with Direct", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct","rollingConfig":{}}`, "rollingConfig", "conflict"},
		{"directConfig with BlueGreen", `{` + base + `,"clusters":["dev-1"],"strategy":"BlueGreen","directConfig":{}}`, "directConfig", "conflict"},
		// Canary.
		{"initial negative", canary(`"initialPercentage":-1`), "canaryConfig.initialPercentage", "range"},
		{"initial zero", canary(`"initialPercentage":0`), "canaryConfig.initialPercentage", "range"},
		{"initial over 100", canary(`"initialPercentage":101`), "canaryConfig.initialPercentage", "range"},
		{"increment negative", canary(`"incrementPercentage":-5`), "canaryConfig.incrementPercentage", "range"},
		{"increment over 100", canary(`"incrementPercentage":100.5`), "canaryConfig.incrementPercentage", "range"},
		{"evaluation unparsable", canary(`"evaluationPeriod":"5m"`), "canaryConfig.evaluationPeriod", "format"},
		{"evaluation in months", canary(`"evaluationPeriod":"P1M"`), "canaryConfig.evaluationPeriod", "format"},
		{"evaluation negative", canary(`"evaluationPeriod":"-PT5M"`), "canaryConfig.evaluationPeriod", "range"},
		{"evaluation over a day", canary(`"evaluationPeriod":"PT24H1S"`), "canaryConfig.evaluationPeriod", "range"},
		{"threshold negative", canary(`"successThreshold":-0.5`), "canaryConfig.successThreshold", "range"},
		{"threshold zero", canary(`"successThreshold":0`), "canaryConfig.successThreshold", "range"},
		{"threshold over 100", canary(`"successThreshold":101`), "canaryConfig.successThreshold", "range"},
		{"stages empty", canary(`"stages":[]`), "canaryConfig.stages", "required"},
		{"stages not a list", canary(`"stages":"10,100"`), "canaryConfig.stages", "format"},
		{"stages entry zero", canary(`"stages":[0,100]`), "canaryConfig.stages[0]", "range"},
		{"stages entry over 100", canary(`"stages":[10,120]`), "canaryConfig.stages[1]", "range"},
		{"stages after 100", canary(`"stages":[10,100,120]`), "canaryConfig.stages[2]", "range"},
		{"stages entry negative", canary(`"stages":[-10,100]`), "canaryConfig.stages[0]", "range"},
		{"stages falling", canary(`"stages":[10,50,30,100]`), "canaryConfig.stages[2]", "order"},
		{"stages repeated", canary(`"stages":[10,10,100]`), "canaryConfig.stages[1]", "order"},
		{"stages not ending at 100", canary(`"stages":[10,30,50]`), "canaryConfig.stages[2]", "range"},
		{"stages too many", canary(`"stages":[` + strings.Repeat("0.5,", 100) + `100]`), "canaryConfig.stages", "range"},
		{"stages against initial", canary(`"initialPercentage":5,"stages":[10,30,100]`), "canaryConfig.initialPercentage", "conflict"},
		{"stages against increment", canary(`"initialPercentage":10,"incrementPercentage":20,"stages":[10,50,100]`), "canaryConfig.incrementPercentage", "conflict"},
		{"increment with a single stage", canary(`"incrementPercentage":20,"stages":[100]`), "canaryConfig.incrementPercentage", "conflict"},
		// BlueGreen.
		{"blue equals green", blueGreen(`"blueNamespace":"ops","greenNamespace":"ops"`), "blueGreenConfig.greenNamespace", "conflict"},
		{"blue not a label", blueGreen(`"blueNamespace":"Ops_1"`), "blueGreenConfig.blueNamespace", "format"},
		{"green not a label", blueGreen(`"greenNamespace":"` + strings.Repeat("g", 64) + `"`), "blueGreenConfig.greenNamespace", "format"},
		{"validation unparsable", blueGreen(`"validationPeriod":"PT"`), "blueGreenConfig.validationPeriod", "format"},
		{"validation too long", blueGreen(`"validationPeriod":"P2D"`), "blueGreenConfig.validationPeriod", "range"},
		{"autoSwitch a string", blueGreen(`"autoSwitch":"yes"`), "blueGreenConfig.autoSwitch", "format"},
		// Rolling.
		{"order unknown cluster", rolling(`"clusterOrder":["dev-1","stage-1","nope"]`), "rollingConfig.clusterOrder[2]", "notFound"},
		{"order not a target", rolling(`"clusterOrder":["dev-1","prod-us"]`), "rollingConfig.clusterOrder[1]", "notFound"},
		{"order twice", rolling(`"clusterOrder":["dev-1","stage-1","dev-1"]`), "rollingConfig.clusterOrder[2]", "duplicate"},
		{"rolling validation unparsable", rolling(`"validationPeriod":"PT5Q"`), "rollingConfig.validationPeriod", "format"},
		{"pause negative", rolling(`"pauseBetweenClusters":"-PT1S"`), "rollingConfig.pauseBetweenClusters", "range"},
		{"pause unparsable", rolling(`"pauseBetweenClusters":"1 minute"`), "rollingConfig.pauseBetweenClusters", "format"},
		// Bake window.
		{"bakeWindow unparsable", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct","bakeWindow":"15m"}`, "bakeWindow", "format"},
		{"bakeWindow in months", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct","bakeWindow":"P1M"}`, "bakeWindow", "format"},
		{"bakeWindow negative", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct","bakeWindow":"-PT1M"}`, "bakeWindow", "range"},
		{"bakeWindow over a day", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct","bakeWindow":"P1DT1S"}`, "bakeWindow", "range"},
		{"bakeWindow a number", `{` + base + `,"clusters":["dev-1"],"strategy":"Direct","bakeWindow":900}`, "bakeWindow", "format"},
		// Direct.
		{"parallel zero", direct(`"parallelClusters":0`), "directConfig.parallelClusters", "range"},
		{"parallel negative", direct(`"parallelClusters":-3`), "directConfig.parallelClusters", "range"},
		{"parallel huge", direct(`"parallelClusters":1001`), "directConfig.parallelClusters", "range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := api.DecodeDeploymentRequest([]byte(tc.body))
			if err == nil {
				err = resolveErr(req, fleet)
			}
			e, ok := invalid.As(err)
			if !ok {
				t.Fatalf("error = %v, want *invalid.Error on %q", err, tc.field)
			}
			if e.Field != tc.field || e.Reason != tc.reason {
				t.Errorf("error = field %q reason %q (%v), want field %q reason %q", e.Field, e.Reason, e, tc.field, tc.reason)
			}
			if e.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

// TestCanaryStages: the stages of canaryConfig, from the increments (the design's three) or
// from an explicit list, with initialPercentage and incrementPercentage beside it when they agree.
func TestCanaryStages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  string
		want []float64
	}{
		{`"initialPercentage":10,"incrementPercentage":20`, []float64{10, 30, 100}},
		{``, []float64{10, 30, 100}},
		{`"initialPercentage":50,"incrementPercentage":50`, []float64{50, 100}},
		{`"initialPercentage":60,"incrementPercentage":50`, []float64{60, 100}},
		{`"initialPercentage":100`, []float64{100}},
		{`"initialPercentage":0.5,"incrementPercentage":0.5`, []float64{0.5, 1, 100}},
		{`"stages":[10,30,50,100]`, []float64{10, 30, 50, 100}},
		{`"initialPercentage":10,"incrementPercentage":20,"stages":[10,30,50,100]`, []float64{10, 30, 50, 100}},
		{`"initialPercentage":0.1,"incrementPercentage":0.2,"stages":[0.1,0.3,100]`, []float64{0.1, 0.3, 100}}, // 0.3-0.1 is not 0.2 in floating point
		{`"stages":[100]`, []float64{100}},
		{`"initialPercentage":100,"stages":[100]`, []float64{100}},
	} {
		req, err := api.DecodeDeploymentRequest([]byte(canary(tc.cfg)))
		var spec *Spec
		if err == nil {
			spec, err = Resolve(req, fleet, Defaults{})
		}
		if err != nil {
			t.Errorf("%s: %v", tc.cfg, err)
			continue
		}
		c := spec.Canary
		if !reflect.DeepEqual(c.Stages, tc.want) {
			t.Errorf("%s: stages %v, want %v", tc.cfg, c.Stages, tc.want)
		}
		if c.InitialPercentage != tc.want[0] {
			t.Errorf("%s: initial %v, want %v", tc.cfg, c.InitialPercentage, tc.want[0])
		}
	}
}

func canary(cfg string) string {
	return `{"operator":"op","version":"1","environments":["Dev"],"strategy":"Canary","canaryConfig":{` + cfg + `}}`
}

func blueGreen(cfg string) string {
	return `{"operator":"op","version":"1","environments":["Dev"],"strategy":"BlueGreen","blueGreenConfig":{` + cfg + `}}`
}

func rolling(cfg string) string {
	return `{"operator":"op","version":"1","clusters":["dev-1","stage-1","dev-2"],"strategy":"Rolling","rollingConfig":{` + cfg + `}}`
}

func direct(cfg string) string {
	return `{"operator":"op","version":"1","environments":["Dev"],"strategy":"Direct","directConfig":{` + cfg + `}}`
}

func TestResolveNil(t *testing.T) {
	t.Parallel()
	if e, ok := invalid.As(resolveErr(nil, fleet)); !ok || e.Reason != "required" {
		t.Errorf("Resolve(nil) = %v", e)
	}
	if _, err := api.DecodeDeploymentRequest(make([]byte, api.MaxBody+1)); fieldOf(err) != "" {
		t.Errorf("oversized body: %v", err)
	}
}

func TestTargetsByEnvironment(t *testing.T) {
	t.Parallel()
	req := &api.DeploymentRequest{Environments: []string{"Production", "Dev"}}
	got, err := Targets(req, fleet)
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{"dev-1", "Dev"}, {"dev-2", "Dev"}, {"prod-eu", "Production"}, {"prod-us", "Production"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets = %v, want %v", got, want)
	}
	// An environment without clusters is an error, not an empty deployment.
	_, err = Targets(&api.DeploymentRequest{Environments: []string{"Staging"}}, []Target{{"dev-1", "Dev"}})
	if e, ok := invalid.As(err); !ok || e.Field != "environments[0]" || e.Reason != "notFound" {
		t.Errorf("empty environment: %v", err)
	}
}

func TestClusterOrder(t *testing.T) {
	t.Parallel()
	targets := []Target{{"dev-1", "Dev"}, {"dev-2", "Dev"}, {"stage-1", "Staging"}, {"prod-eu", "Production"}}
	got, err := ClusterOrder([]string{"prod-eu", "dev-2"}, targets)
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{"prod-eu", "Production"}, {"dev-2", "Dev"}, {"dev-1", "Dev"}, {"stage-1", "Staging"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}
