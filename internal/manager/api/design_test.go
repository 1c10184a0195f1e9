package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/designtest"
)

// The design's example bodies (operator-manager-spec.md), kept as testdata: the Canary one and
// the health answer where their packages' tests keep them, the other strategies here.
var designHealth = filepath.Join("..", "server", "testdata", "design-operator-health.json")

// TestDesign_DeploymentRequests: each strategy's example decodes strictly (no unknown field)
// into DeploymentRequest and resolves to the settings it spells out.
func TestDesign_DeploymentRequests(t *testing.T) {
	for _, c := range []struct {
		path string
		want api.Settings
	}{
		{filepath.Join("..", "rollout", "strategy", "testdata", "design-canary.json"), api.Settings{Strategy: api.StrategyCanary,
			Canary: &api.CanarySettings{InitialPercentage: 10, IncrementPercentage: 20, EvaluationPeriod: 5 * time.Minute,
				SuccessThreshold: 0.95, Stages: []float64{10, 30, 100}}}},
		{filepath.Join("testdata", "design-bluegreen.json"), api.Settings{Strategy: api.StrategyBlueGreen,
			BlueGreen: &api.BlueGreenSettings{BlueNamespace: "operators-blue", GreenNamespace: "operators-green",
				ValidationPeriod: 10 * time.Minute, AutoSwitch: true}}},
		{filepath.Join("testdata", "design-rolling.json"), api.Settings{Strategy: api.StrategyRolling,
			Rolling: &api.RollingSettings{ClusterOrder: []string{"dev-1", "dev-2", "staging", "prod-us", "prod-eu"},
				ValidationPeriod: 5 * time.Minute, PauseBetweenClusters: 2 * time.Minute}}},
		{filepath.Join("testdata", "design-direct.json"), api.Settings{Strategy: api.StrategyDirect,
			Direct: &api.DirectSettings{ParallelClusters: 10}}},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			data, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			req, err := api.DecodeDeploymentRequest(data)
			if err != nil {
				t.Fatalf("the design's example does not decode: %v", err)
			}
			got, err := api.ResolveSettings(req)
			if err != nil {
				t.Fatalf("the design's example is refused: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("settings:\n got %s\nwant %s", show(t, got), show(t, c.want))
			}
		})
	}
}

func show(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDesign_OperatorHealth: the design's health answer decodes strictly into OperatorHealth and
// ClusterOperatorHealth (one cluster's entry), and written back keeps every key and JSON type.
func TestDesign_OperatorHealth(t *testing.T) {
	data, err := os.ReadFile(designHealth)
	if err != nil {
		t.Fatal(err)
	}
	var oh api.OperatorHealth
	strict(t, data, &oh)
	if oh.OperatorName != "cert-manager" || len(oh.Clusters) != 1 || oh.Clusters[0].ControllerPods != 3 ||
		oh.Clusters[0].WebhookStatus != "Available" || oh.Clusters[0].LastChecked.IsZero() {
		t.Fatalf("decoded: %+v", oh)
	}
	if diff := designtest.Types(designtest.Load(t, designHealth), designtest.Generic(t, oh)); len(diff) != 0 {
		t.Fatalf("written back, the answer differs from the design: %v", diff)
	}
	design := designtest.Load(t, designHealth).(map[string]any)
	entry := design["clusters"].([]any)[0].(map[string]any)
	entry["operatorName"] = design["operatorName"]
	raw, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	var one api.ClusterOperatorHealth
	strict(t, raw, &one)
	if diff := designtest.Types(designtest.Generic(t, raw), designtest.Generic(t, one)); len(diff) != 0 {
		t.Fatalf("written back, one cluster's entry differs from the design: %v", diff)
	}
}

func strict(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s does not decode into %T: %v", data, v, err)
	}
}
