package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestDefaultValuesUnderDeploymentValues: the operator's default values reach the installed
// release merged under the deployment's values (the deployment's win, key by key inside
// objects), and the deployment records the values it was asked for.
func TestDefaultValuesUnderDeploymentValues(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	op := h.operator("defaults", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	ctx := context.Background()
	if _, err := h.store.OperatorConfigSet(ctx, &store.OperatorConfigSetParams{Now: time.Now(), OperatorConfig: store.OperatorConfig{
		OperatorID: op.ID, DefaultValues: json.RawMessage(`{"tuning": {"a": "default", "b": "default"}, "onlyDefault": 1}`)}}); err != nil {
		t.Fatal(err)
	}
	h.start()

	d := h.submit(`{"operator": "defaults", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct",
		"values": {"tuning": {"b": "mine"}, "onlyMine": true}}`)
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	rel, err := install.Status(ctx, h.admin["dev-1"], "defaults", "op-defaults")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"tuning": map[string]any{"a": "default", "b": "mine"}, "onlyDefault": float64(1), "onlyMine": true}
	if !reflect.DeepEqual(rel.Values, want) {
		t.Fatalf("release values %v, want %v", rel.Values, want)
	}
	var recorded map[string]any
	if err := json.Unmarshal(d.Values, &recorded); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"tuning": map[string]any{"b": "mine"}, "onlyMine": true}; !reflect.DeepEqual(recorded, want) {
		t.Fatalf("the deployment recorded values %v, want those it was asked for %v", recorded, want)
	}
}
