package request

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

func TestConfigJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		designCanary,
		canary(`"initialPercentage":10,"stages":[10,30,50,100],"evaluationPeriod":"PT1M"`),
		rolling(`"clusterOrder":["stage-1"],"validationPeriod":"PT1S","pauseBetweenClusters":"PT2S"`),
		blueGreen(`"greenNamespace":"g","autoSwitch":false`),
		direct(`"parallelClusters":2,"skipHealthChecks":true`),
		`{"operator":"op","version":"1","clusters":["dev-1"],"strategy":"Direct"}`,
	} {
		req, err := api.DecodeDeploymentRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := req.ConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		back := *req
		back.CanaryConfig, back.BlueGreenConfig, back.RollingConfig, back.DirectConfig = nil, nil, nil, nil
		if err := back.SetConfigJSON(raw); err != nil {
			t.Fatal(err)
		}
		// An omitted config comes back as an empty one: the same settings.
		if req.DirectConfig == nil && req.Strategy == api.StrategyDirect {
			if string(raw) != "{}" || *back.DirectConfig != (api.DirectConfig{}) {
				t.Errorf("no config: %s, %+v", raw, back.DirectConfig)
			}
			continue
		}
		if !reflect.DeepEqual(&back, req) {
			t.Errorf("%s: config %s came back as %+v", body, raw, back)
		}
	}
	r := &api.DeploymentRequest{Strategy: api.StrategyCanary}
	if err := r.SetConfigJSON(json.RawMessage(`{"initialPercent":1}`)); err == nil {
		t.Error("an unknown field in a stored config was accepted")
	}
	if err := (&api.DeploymentRequest{Strategy: "x"}).SetConfigJSON(json.RawMessage(`{}`)); err == nil {
		t.Error("an unknown strategy was accepted")
	}
	if _, err := (&api.DeploymentRequest{Strategy: "x"}).ConfigJSON(); err == nil {
		t.Error("an unknown strategy was accepted")
	}
}
