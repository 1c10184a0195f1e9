package health

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
)

// TestResponseShape pins the JSON field names of the health API's response.
func TestResponseShape(t *testing.T) {
	oh := Overall("cert-manager", []api.OperatorHealthCheck{{ClusterName: "prod-eu", Health: api.Healthy}})
	raw, err := json.Marshal(oh)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(m); !reflect.DeepEqual(got, []string{"clusters", "operatorName", "overallHealth"}) {
		t.Fatalf("top-level keys %v", got)
	}
	c := m["clusters"].([]any)[0].(map[string]any)
	// The design's six keys, and each part's details beside them (the operator's metrics too).
	want := []string{"clusterName", "controllerPods", "crdReconciliation", "crds", "health", "lastChecked", "metrics", "pods", "webhookStatus", "webhooks"}
	if got := sortedKeys(c); !reflect.DeepEqual(got, want) {
		t.Fatalf("cluster keys %v, want %v", got, want)
	}
	// crdReconciliation stays a string; the baseline and whose failures they are sit in crds.
	if _, ok := c["crdReconciliation"].(string); !ok {
		t.Fatalf("crdReconciliation is %T, want a string", c["crdReconciliation"])
	}
	wantCRDs := []string{"baseline", "crds", "errorRate", "examples", "failing", "health", "messages", "operatorFailures",
		"pending", "ready", "resources", "stale", "tenantFailures"}
	if got := sortedKeys(c["crds"].(map[string]any)); !reflect.DeepEqual(got, wantCRDs) {
		t.Fatalf("crds keys %v, want %v", got, wantCRDs)
	}
	if m["overallHealth"] != "Healthy" || c["clusterName"] != "prod-eu" {
		t.Fatalf("values: %s", raw)
	}

	// One cluster's answer: the same entry, flattened, with the operator's name.
	raw, err = json.Marshal(api.ClusterOperatorHealth{OperatorName: "cert-manager", OperatorHealthCheck: oh.Clusters[0]})
	if err != nil {
		t.Fatal(err)
	}
	m = nil
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(m); !reflect.DeepEqual(got, []string{"clusterName", "controllerPods", "crdReconciliation", "crds",
		"health", "lastChecked", "metrics", "operatorName", "pods", "webhookStatus", "webhooks"}) {
		t.Fatalf("one cluster's keys %v", got)
	}
}

// TestDecodeResult reads a stored check in today's shape and in the one stored before the
// design's one-value fields (details under controllerPods, webhookStatus, crdReconciliation).
func TestDecodeResult(t *testing.T) {
	checked := time.Date(2026, 11, 24, 1, 30, 0, 0, time.UTC)
	want := api.OperatorHealthCheck{ClusterName: "prod-eu", Health: api.Unhealthy, LastChecked: checked,
		Pods:     api.PodsStatus{Health: api.Unhealthy, Total: 3, Ready: 2, CrashLooping: 1, Resources: api.VerdictNotChecked, Messages: []string{"pod x: CrashLoopBackOff"}},
		Webhooks: api.WebhooksStatus{Health: api.Healthy, Total: 1, Healthy: 1, Webhooks: []api.WebhookResult{{Name: "w/v", Kind: "Validating", Answer: api.VerdictPassed, Certificate: api.VerdictPassed}}, Messages: []string{}},
		CRDs:     api.ReconciliationStatus{Health: api.Healthy, CRDs: 1, Resources: 2, Ready: 2, Messages: []string{}},
	}
	summarize(&want)
	if want.ControllerPods != 2 || want.WebhookStatus != api.WebhookAvailable || want.CRDReconciliation != api.ReconciliationActive {
		t.Fatalf("summarized %d %s %s", want.ControllerPods, want.WebhookStatus, want.CRDReconciliation)
	}
	current, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	legacy := `{"clusterName":"prod-eu","health":"Unhealthy","lastChecked":"2026-11-24T01:30:00Z",
	 "controllerPods":{"health":"Unhealthy","total":3,"ready":2,"crashLooping":1,"maxRecentRestarts":0,"resources":"NotChecked","overLimit":0,"messages":["pod x: CrashLoopBackOff"]},
	 "webhookStatus":{"health":"Healthy","total":1,"healthy":1,"webhooks":[{"name":"w/v","kind":"Validating","endpoint":"","answer":"Passed","latencyMs":0,"certificate":"Passed"}],"messages":[]},
	 "crdReconciliation":{"health":"Healthy","crds":1,"resources":2,"ready":2,"failing":0,"stale":0,"pending":0,"errorRate":0,"messages":[]}}`
	for name, raw := range map[string][]byte{"current": current, "legacy": []byte(legacy)} {
		got, err := DecodeResult(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
	for _, bad := range []string{`not json`, `{"controllerPods": "three"}`, `{"controllerPods": {"total": "x"}}`} {
		if _, err := DecodeResult([]byte(bad)); err == nil {
			t.Errorf("DecodeResult(%s): no error", bad)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestOverallHealth(t *testing.T) {
	for _, tc := range []struct {
		in   []api.HealthState
		want api.HealthState
	}{
		{nil, api.Unhealthy},
		{[]api.HealthState{api.Healthy, api.Healthy}, api.Healthy},
		{[]api.HealthState{api.Healthy, api.Degraded}, api.Degraded},
		{[]api.HealthState{api.Degraded, api.Unhealthy, api.Healthy}, api.Unhealthy},
	} {
		var cs []api.OperatorHealthCheck
		for _, h := range tc.in {
			cs = append(cs, api.OperatorHealthCheck{Health: h})
		}
		if got := Overall("op", cs).OverallHealth; got != tc.want {
			t.Errorf("overall of %v = %s, want %s", tc.in, got, tc.want)
		}
	}
	if oh := Overall("op", nil); oh.Clusters == nil {
		t.Error("clusters of an operator checked nowhere is null, want []")
	}
}

func TestTally(t *testing.T) {
	h, d, u := Tally(map[string][]api.HealthState{
		"a": {api.Healthy, api.Degraded},
		"b": {api.Unhealthy, api.Healthy},
		"c": {api.Healthy},
		"d": {api.Healthy, api.Healthy},
	})
	if h != 2 || d != 1 || u != 1 {
		t.Fatalf("tally healthy/degraded/unhealthy = %d/%d/%d, want 2/1/1", h, d, u)
	}
	if h, d, u := Tally(nil); h+d+u != 0 {
		t.Fatalf("tally of nothing = %d/%d/%d", h, d, u)
	}
}

// TestUnreachableClusterNeverPasses checks a cluster nobody answers for: every part says it was
// not checked, none passes, and the result is Degraded, not Healthy (nor a rollback reason).
func TestUnreachableClusterNeverPasses(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	got, err := NewChecker(Config{}).Check(context.Background(), "gone", rc,
		Target{OperatorName: "op", Namespace: "ops", Release: "op", CRDs: []string{"widgets.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Health != api.Degraded || got.Pods.Health != api.Degraded || got.Webhooks.Health != api.Degraded ||
		got.CRDs.Health != api.Degraded {
		t.Fatalf("unreachable cluster = %+v, want every part Degraded", got)
	}
	if got.Pods.Resources != api.VerdictNotChecked || got.Webhooks.Healthy != 0 || got.CRDs.Ready != 0 || got.ControllerPods != 0 ||
		got.WebhookStatus != api.WebhookUnknown || got.CRDReconciliation != api.ReconciliationUnknown {
		t.Fatalf("something passed on an unreachable cluster: %+v", got)
	}
	for _, ms := range [][]string{got.Pods.Messages, got.Webhooks.Messages, got.CRDs.Messages} {
		if !hasMessage(ms, "not checked: ") {
			t.Fatalf("messages %q do not say not checked", ms)
		}
	}
}

func TestInvalidTarget(t *testing.T) {
	c := NewChecker(Config{})
	for field, tg := range map[string]Target{
		"operatorName": {Namespace: "n", Release: "r"},
		"namespace":    {OperatorName: "o", Release: "r"},
		"release":      {OperatorName: "o", Namespace: "n"},
		"podSelector":  {OperatorName: "o", Namespace: "n", Release: "r", PodSelector: "a in (("},
	} {
		_, err := c.Check(context.Background(), "c", env.Config, tg)
		if e, ok := invalid.As(err); !ok || e.Field != field {
			t.Errorf("target %+v: error %v, want an *invalid.Error on %s", tg, err, field)
		}
	}
	var e *invalid.Error
	if _, err := c.Check(context.Background(), "c", nil, Target{OperatorName: "o", Namespace: "n", Release: "r"}); !errors.As(err, &e) {
		t.Errorf("nil rest.Config: %v", err)
	}
}

// TestSpansAndDuration checks the span tree of one check and that its durations are recorded. It
// replaces the global tracer provider, so it does not run in parallel.
func TestSpansAndDuration(t *testing.T) {
	rec := spantest.Record(t)
	countOf := func(check string) uint64 {
		h, err := telemetry.OperatorHealthCheckDuration.GetMetricWithLabelValues(check)
		if err != nil {
			t.Fatal(err)
		}
		return sampleCount(t, h)
	}
	n0 := countOf(telemetry.HealthCheckAll)

	ns := namespace(t)
	if _, err := NewChecker(Config{}).Check(context.Background(), "local", env.Config,
		Target{OperatorName: "traced", Namespace: ns, Release: "traced"}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	root, ok := byName["operator.healthcheck"]
	if !ok || len(spans) != 5 {
		t.Fatalf("%d spans %v, want operator.healthcheck and its 4 parts", len(spans), names(spans))
	}
	for _, n := range []string{"pod.healthcheck", "webhook.healthcheck", "crd.reconciliation.check", "operator.metrics.check"} {
		s, ok := byName[n]
		if !ok || s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Fatalf("span %s missing or not a child of operator.healthcheck: %v", n, names(spans))
		}
	}
	// No pods: the pods part and the whole check are Unhealthy, marked as errors.
	if root.Status().Code != codes.Error || byName["pod.healthcheck"].Status().Code != codes.Error ||
		byName["crd.reconciliation.check"].Status().Code != codes.Unset {
		t.Fatalf("span statuses: root %v, pods %v, crds %v", root.Status(), byName["pod.healthcheck"].Status(), byName["crd.reconciliation.check"].Status())
	}
	if got := countOf(telemetry.HealthCheckAll) - n0; got != 1 {
		t.Fatalf("%d check durations recorded, want 1", got)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func sampleCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	m := &dto.Metric{}
	if err := o.(prometheus.Metric).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := g.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
