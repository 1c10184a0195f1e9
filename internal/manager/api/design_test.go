package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// The design's example request bodies (operator-manager-spec.md), kept as testdata: the Canary
// one where package strategy's tests keep it, the other strategies here. The design's health
// answer is decoded into the wire types by the server's TestDesignOperatorHealthJSON.

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
