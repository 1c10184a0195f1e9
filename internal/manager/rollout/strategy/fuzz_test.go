package strategy

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
)

// FuzzDecodeValidatePlan: any body either fails Decode or Resolve with an *invalid.Error, or
// plans without error into a plan that keeps checkPlan's invariants.
func FuzzDecodeValidatePlan(f *testing.F) {
	for _, s := range []string{
		`{"operator":"op","version":"1","environments":["Dev","Staging","Production"],"strategy":"Canary","canaryConfig":{"initialPercentage":10,"incrementPercentage":20,"evaluationPeriod":"PT5M","successThreshold":95}}`,
		`{"operator":"op","version":"1","clusters":["prod-1","dev-1"],"strategy":"Rolling","rollingConfig":{"clusterOrder":["prod-1"],"validationPeriod":"PT1S","pauseBetweenClusters":"PT0.5S"}}`,
		`{"operator":"op","version":"1","environments":["Production"],"strategy":"Direct","directConfig":{"parallelClusters":2,"skipHealthChecks":true}}`,
		`{"operator":"op","version":"1","environments":["Dev"],"strategy":"BlueGreen","blueGreenConfig":{"blueNamespace":"a","greenNamespace":"b","validationPeriod":"P1D","autoSwitch":false}}`,
		`{"operator":"op","version":"1","clusters":["dev-1"],"values":{"a":{"b":null}},"valuesByEnvironment":{"Dev":{"a":1}},"strategy":"Direct"}`,
		`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Canary","canaryConfig":{"initialPercentage":1e-300,"incrementPercentage":1e-300}}`,
		`{"operator":"op","version":"1","environments":["Dev","Staging","Production"],"strategy":"Canary","canaryConfig":{"initialPercentage":10,"incrementPercentage":20,"stages":[10,30,50,100]}}`,
		`{"operator":"op","version":"1","clusters":["dev-1","prod-1"],"strategy":"Canary","canaryConfig":{"stages":[1e-300,100]}}`,
		`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Rolling","canaryConfig":{}}`,
		`{"operator":"op","version":"1","clusters":["dev-1"],"environments":["Dev"],"strategy":"Direct"}`,
		`{"Operator":"op","VERSION":"1","clusters":["dev-1"],"strategy":"Direct","directconfig":{"x":1}}`,
		`[]`, `{}`, `null`, `{"operator":`,
	} {
		f.Add([]byte(s))
	}
	fleet := append(append([]Target(nil), ten...), Target{Name: "edge", Environment: "Dev"}, Target{Name: "unknown-env", Environment: "Lab"})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := api.DecodeDeploymentRequest(body)
		var spec *request.Spec
		if err == nil {
			spec, err = request.Resolve(req, fleet, request.Defaults{})
		}
		if err != nil {
			if _, ok := invalid.As(err); !ok {
				t.Fatalf("%q: error %v is not an *invalid.Error", body, err)
			}
			return
		}
		p, err := NewPlan(spec, &Options{OperatorNamespace: "ops"})
		if err != nil {
			t.Fatalf("%q: valid, but NewPlan: %v", body, err)
		}
		checkPlan(t, spec, spec.Targets, p)
		for _, env := range request.Environments {
			if _, err := spec.ValuesFor(env); err != nil {
				t.Fatalf("%q: valid, but ValuesFor(%s): %v", body, env, err)
			}
		}
	})
}
