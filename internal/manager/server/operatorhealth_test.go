package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

func TestOperatorHealth(t *testing.T) {
	forEngine(t, testOperatorHealth)
}

func testOperatorHealth(t *testing.T, engine string) {
	b := setup(t, engine)
	b.addCluster("dev-1", store.EnvironmentDev)
	b.addCluster("prod-1", store.EnvironmentProduction)
	viewer := b.viewer()
	get := func(path string) (health.OperatorHealth, map[string]any) {
		t.Helper()
		r := b.do("GET", path, viewer, nil)
		expect(t, path, r, http.StatusOK)
		var oh health.OperatorHealth
		r.json(t, &oh)
		var raw map[string]any
		r.json(t, &raw)
		return oh, raw
	}

	// Unknown operator or cluster: 404. Known but never checked: Unknown, no clusters.
	expect(t, "unknown operator", b.do("GET", "/api/v1/operators/nobody/health", viewer, nil), http.StatusNotFound)
	expect(t, "unknown operator on a cluster", b.do("GET", "/api/v1/clusters/dev-1/operators/nobody/health", viewer, nil), http.StatusNotFound)
	d := b.submitDirect("widgets")
	r := b.do("GET", "/api/v1/clusters/nowhere/operators/widgets/health", viewer, nil)
	expect(t, "unknown cluster", r, http.StatusNotFound)
	if e := r.apiError(t); e.Details["kind"] != "cluster" {
		t.Fatalf("unknown cluster: %s", r.body)
	}
	for _, path := range []string{"/api/v1/operators/widgets/health", "/api/v1/clusters/dev-1/operators/widgets/health"} {
		oh, raw := get(path)
		if oh.OperatorName != "widgets" || oh.OverallHealth != "Unknown" || oh.Clusters == nil || len(oh.Clusters) != 0 {
			t.Fatalf("%s before any check: %+v", path, oh)
		}
		if cs, ok := raw["clusters"].([]any); !ok || len(cs) != 0 {
			t.Fatalf("%s: clusters must be an empty list: %v", path, raw)
		}
	}

	// Checks as the engine records them: the check's result as JSON.
	checked := time.Now().UTC().Truncate(time.Second)
	healthy := health.ClusterHealth{ClusterName: "dev-1", Health: health.Healthy, LastChecked: checked,
		ControllerPods:    health.PodsStatus{Health: health.Healthy, Total: 2, Ready: 2, Resources: health.NotChecked, Messages: []string{}},
		WebhookStatus:     health.WebhookStatus{Health: health.Healthy, Total: 1, Healthy: 1, Messages: []string{}, Webhooks: []health.WebhookResult{{Name: "widgets/validate", Kind: "Validating", Answer: health.Passed, Certificate: health.Passed, LatencyMs: 4}}},
		CRDReconciliation: health.CRDStatus{Health: health.Healthy, CRDs: 1, Resources: 10, Ready: 10, Messages: []string{}},
	}
	unhealthy := healthy
	unhealthy.ClusterName, unhealthy.Health = "prod-1", health.Unhealthy
	unhealthy.ControllerPods = health.PodsStatus{Health: health.Unhealthy, Total: 1, CrashLooping: 1, MaxRecentRestarts: 4,
		Resources: health.NotChecked, Messages: []string{"pod widgets-0: CrashLoopBackOff"}}
	for _, ch := range []health.ClusterHealth{healthy, unhealthy} {
		res, err := json.Marshal(ch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.OperatorHealthRecord(context.Background(), &store.OperatorHealthRecordParams{OperatorName: "widgets",
			ClusterName: ch.ClusterName, DeploymentID: d.ID, Health: string(ch.Health), Result: res, CheckedAt: checked}); err != nil {
			t.Fatal(err)
		}
	}

	oh, raw := get("/api/v1/operators/widgets/health")
	if oh.OverallHealth != health.Unhealthy || len(oh.Clusters) != 2 {
		t.Fatalf("overall: %+v", oh)
	}
	byName := map[string]health.ClusterHealth{}
	for _, c := range oh.Clusters {
		byName[c.ClusterName] = c
	}
	for _, want := range []health.ClusterHealth{healthy, unhealthy} {
		got := byName[want.ClusterName]
		if !got.LastChecked.Equal(want.LastChecked) {
			t.Errorf("%s lastChecked %s, want %s", want.ClusterName, got.LastChecked, want.LastChecked)
		}
		got.LastChecked = want.LastChecked
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", want.ClusterName, g, w)
		}
	}
	// Exactly the design's keys.
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if k := keys(raw); !slices.Equal(k, []string{"clusters", "operatorName", "overallHealth"}) {
		t.Errorf("keys %v", k)
	}
	if k := keys(raw["clusters"].([]any)[0].(map[string]any)); !slices.Equal(k,
		[]string{"clusterName", "controllerPods", "crdReconciliation", "health", "lastChecked", "webhookStatus"}) {
		t.Errorf("cluster keys %v", k)
	}

	// One cluster.
	oh, _ = get("/api/v1/clusters/dev-1/operators/widgets/health")
	if oh.OverallHealth != health.Healthy || len(oh.Clusters) != 1 || oh.Clusters[0].ClusterName != "dev-1" || oh.Clusters[0].ControllerPods.Ready != 2 {
		t.Fatalf("dev-1: %+v", oh)
	}
	oh, _ = get("/api/v1/clusters/prod-1/operators/widgets/health")
	if oh.OverallHealth != health.Unhealthy || oh.Clusters[0].ControllerPods.CrashLooping != 1 {
		t.Fatalf("prod-1: %+v", oh)
	}
}
