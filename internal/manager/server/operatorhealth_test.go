package server

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/designtest"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// designHealthFile is the design's example answer of GET /api/v1/operators/{name}/health, copied
// verbatim from operator-manager-spec.md ("Health Monitoring", "Health Check Endpoint").
var designHealthFile = filepath.Join("testdata", "design-operator-health.json")

// designClusterEntry is the design's cluster entry with operatorName beside it: the shape of
// GET /api/v1/clusters/{cluster}/operators/{name}/health.
func designClusterEntry(t *testing.T) any {
	t.Helper()
	design := designtest.Load(t, designHealthFile).(map[string]any)
	entry := design["clusters"].([]any)[0].(map[string]any)
	entry["operatorName"] = design["operatorName"]
	return entry
}

// TestDesignOperatorHealthJSON decodes the design's example into the wire type (api.OperatorHealth:
// every key a field of it) and encodes it back: each of the design's keys is there with the same JSON type
// (controllerPods a number, webhookStatus and crdReconciliation strings…) and the same value.
func TestDesignOperatorHealthJSON(t *testing.T) {
	data, err := os.ReadFile(designHealthFile)
	if err != nil {
		t.Fatal(err)
	}
	var oh api.OperatorHealth
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&oh); err != nil {
		t.Fatalf("the design's example does not decode into api.OperatorHealth: %v", err)
	}
	design, back := designtest.Generic(t, data), designtest.Generic(t, oh)
	if diff := designtest.Types(design, back); len(diff) != 0 {
		t.Fatalf("the design's example, decoded and encoded back, differs in type: %v", diff)
	}
	// Key by key: the same JSON type and the same value as the design.
	var walk func(path string, d, g any)
	walk = func(path string, d, g any) {
		switch dv := d.(type) {
		case map[string]any:
			for k, v := range dv {
				walk(path+"."+k, v, g.(map[string]any)[k])
			}
		case []any:
			for i, v := range dv {
				walk(fmt.Sprintf("%s[%d]", path, i), v, g.([]any)[i])
			}
		default:
			if designtest.TypeOf(d) != designtest.TypeOf(g) || d != g {
				t.Errorf("%s: %v (%s), the design has %v (%s)", path, g, designtest.TypeOf(g), d, designtest.TypeOf(d))
			}
		}
	}
	walk("$", design, back)
	if c := oh.Clusters[0]; c.ControllerPods != 3 || c.WebhookStatus != "Available" ||
		c.CRDReconciliation != "Active" || !c.LastChecked.Equal(time.Date(2025, 11, 23, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("decoded %+v", c)
	}
	// One cluster's answer is the design's entry with operatorName.
	one := designtest.Generic(t, api.ClusterOperatorHealth{OperatorName: oh.OperatorName, OperatorHealthCheck: oh.Clusters[0]})
	if diff := designtest.Types(designClusterEntry(t), one); len(diff) != 0 {
		t.Fatalf("one cluster's answer: %v", diff)
	}
}

func TestOperatorHealth(t *testing.T) {
	forEngine(t, testOperatorHealth)
}

// testOperatorHealth answers from checks recorded as the engine records them (the check's
// result as JSON), including one stored in the shape of an older manager.
func testOperatorHealth(t *testing.T, engine string) {
	b := setup(t, engine)
	b.addCluster("dev-1", store.EnvironmentDev)
	b.addCluster("prod-1", store.EnvironmentProduction)
	b.addCluster("stage-1", store.EnvironmentStaging)
	viewer := b.viewer()
	get := func(path string, v any) map[string]any {
		t.Helper()
		r := b.do("GET", path, viewer, nil)
		expect(t, path, r, http.StatusOK)
		r.json(t, v)
		var raw map[string]any
		r.json(t, &raw)
		return raw
	}

	// Unknown operator or cluster: 404. Known but never checked: Unknown, no clusters; on one
	// cluster, 404 saying so.
	expect(t, "unknown operator", b.do("GET", "/api/v1/operators/nobody/health", viewer, nil), http.StatusNotFound)
	expect(t, "unknown operator on a cluster", b.do("GET", "/api/v1/clusters/dev-1/operators/nobody/health", viewer, nil), http.StatusNotFound)
	d := b.submitDirect("widgets")
	r := b.do("GET", "/api/v1/clusters/nowhere/operators/widgets/health", viewer, nil)
	expect(t, "unknown cluster", r, http.StatusNotFound)
	if e := r.apiError(t); e.Details["kind"] != "cluster" {
		t.Fatalf("unknown cluster: %s", r.body)
	}
	var oh api.OperatorHealth
	raw := get("/api/v1/operators/widgets/health", &oh)
	if oh.OperatorName != "widgets" || oh.OverallHealth != "Unknown" || oh.Clusters == nil || len(oh.Clusters) != 0 {
		t.Fatalf("before any check: %+v", oh)
	}
	if cs, ok := raw["clusters"].([]any); !ok || len(cs) != 0 {
		t.Fatalf("clusters must be an empty list: %v", raw)
	}
	r = b.do("GET", "/api/v1/clusters/dev-1/operators/widgets/health", viewer, nil)
	expect(t, "one cluster before its check", r, http.StatusNotFound)
	if e := r.apiError(t); e.Details["kind"] != "operatorHealth" || e.Message != `operator "widgets" has no health check on cluster "dev-1" yet` {
		t.Fatalf("one cluster before its check: %s", r.body)
	}

	// Checks as the engine records them.
	checked := time.Now().UTC().Truncate(time.Second)
	healthy := api.OperatorHealthCheck{ClusterName: "dev-1", Health: api.Healthy, LastChecked: checked,
		ControllerPods: 2, WebhookStatus: api.WebhookAvailable, CRDReconciliation: api.ReconciliationActive,
		Pods:     api.PodsStatus{Health: api.Healthy, Total: 2, Ready: 2, Resources: api.VerdictNotChecked, Messages: []string{}},
		Webhooks: api.WebhooksStatus{Health: api.Healthy, Total: 1, Healthy: 1, Messages: []string{}, Webhooks: []api.WebhookResult{{Name: "widgets/validate", Kind: "Validating", Answer: api.VerdictPassed, Certificate: api.VerdictPassed, LatencyMs: 4}}},
		CRDs:     api.ReconciliationStatus{Health: api.Healthy, CRDs: 1, Resources: 10, Ready: 10, Messages: []string{}},
	}
	unhealthy := healthy
	unhealthy.ClusterName, unhealthy.Health, unhealthy.ControllerPods = "prod-1", api.Unhealthy, 0
	unhealthy.Pods = api.PodsStatus{Health: api.Unhealthy, Total: 1, CrashLooping: 1, MaxRecentRestarts: 4,
		Resources: api.VerdictNotChecked, Messages: []string{"pod widgets-0: CrashLoopBackOff"}}
	for _, ch := range []api.OperatorHealthCheck{healthy, unhealthy} {
		b.recordHealth(d.ID, ch.ClusterName, ch.Health, checked, ch)
	}
	// A check stored by a manager before the design's one-value fields: details under the
	// design's keys. It answers in the design's shape.
	legacy := json.RawMessage(`{"clusterName":"stage-1","health":"Degraded","lastChecked":"2026-11-24T01:30:00Z",
	 "controllerPods":{"health":"Degraded","total":2,"ready":1,"crashLooping":0,"maxRecentRestarts":0,"resources":"NotChecked","overLimit":0,"messages":["pod w-1 is not Running and Ready (phase Pending)"]},
	 "webhookStatus":{"health":"Healthy","total":0,"healthy":0,"webhooks":[],"messages":[]},
	 "crdReconciliation":{"health":"Healthy","crds":1,"resources":0,"ready":0,"failing":0,"stale":0,"pending":0,"errorRate":0,"messages":[]}}`)
	b.recordHealth(d.ID, "stage-1", api.Degraded, checked, legacy)

	raw = get("/api/v1/operators/widgets/health", &oh)
	if oh.OverallHealth != api.Unhealthy || len(oh.Clusters) != 3 {
		t.Fatalf("overall: %+v", oh)
	}
	if diff := designtest.Types(designtest.Load(t, designHealthFile), raw); len(diff) != 0 {
		t.Fatalf("the answer differs from the design's example in type: %v", diff)
	}
	byName := map[string]api.OperatorHealthCheck{}
	for _, c := range oh.Clusters {
		byName[c.ClusterName] = c
	}
	for _, want := range []api.OperatorHealthCheck{healthy, unhealthy} {
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
	if s := byName["stage-1"]; s.Health != api.Degraded || s.ControllerPods != 1 || s.Pods.Total != 2 ||
		s.WebhookStatus != api.WebhookNotConfigured || s.CRDReconciliation != api.ReconciliationNoResources {
		t.Errorf("the check stored in the older shape: %+v", s)
	}
	// The design's keys, then the details beside them.
	if k := designtest.Keys(raw); !slices.Equal(k, []string{"clusters", "operatorName", "overallHealth"}) {
		t.Errorf("keys %v", k)
	}
	if k := designtest.Keys(raw["clusters"].([]any)[0]); !slices.Equal(k, []string{"clusterName", "controllerPods",
		"crdReconciliation", "crds", "health", "lastChecked", "metrics", "pods", "webhookStatus", "webhooks"}) {
		t.Errorf("cluster keys %v", k)
	}

	// One cluster: the design's entry with operatorName.
	var one api.ClusterOperatorHealth
	raw = get("/api/v1/clusters/dev-1/operators/widgets/health", &one)
	if one.OperatorName != "widgets" || one.ClusterName != "dev-1" || one.Health != api.Healthy || one.ControllerPods != 2 || one.Pods.Ready != 2 {
		t.Fatalf("dev-1: %+v", one)
	}
	if diff := designtest.Types(designClusterEntry(t), raw); len(diff) != 0 {
		t.Fatalf("one cluster's answer differs from the design's entry in type: %v", diff)
	}
	get("/api/v1/clusters/prod-1/operators/widgets/health", &one)
	if one.Health != api.Unhealthy || one.ControllerPods != 0 || one.Pods.CrashLooping != 1 {
		t.Fatalf("prod-1: %+v", one)
	}
}

// recordHealth stores a check of the widgets operator as the engine does.
func (b *bundle) recordHealth(deploymentID, cluster string, h api.HealthState, at time.Time, result any) {
	b.t.Helper()
	res, err := json.Marshal(result)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.store.OperatorHealthRecord(context.Background(), &store.OperatorHealthRecordParams{OperatorName: "widgets",
		ClusterName: cluster, DeploymentID: deploymentID, Health: string(h), Result: res, CheckedAt: at}); err != nil {
		b.t.Fatal(err)
	}
}

func TestOperatorHealthFromACluster(t *testing.T) {
	forEngine(t, testOperatorHealthFromACluster)
}

// testOperatorHealthFromACluster answers from a real check: a release on a real kube-apiserver
// (registered through the API) with a controller pod Running and Ready, a validating webhook
// served by the test over TLS and a custom resource of the chart's CRD; the engine's health
// round checks it (its chart fetched from an HTTP chart repository) and stores the result. Both
// routes answer with the design's keys and types, and the values of that check.
func testOperatorHealthFromACluster(t *testing.T, engine string) {
	b := setup(t, engine)
	srv := fleet(t).Servers[slices.Index(engines, engine)+1]
	expect(t, "register", b.do("POST", "/api/v1/clusters", b.admin(),
		api.ClusterRequest{Name: "dev-1", Environment: "Dev", Kubeconfig: string(srv.Kubeconfig)}), http.StatusCreated)
	repo := charttest.ServeRepository(t, charttest.OperatorChart("widget-operator", "1.0.0", charttest.Compatible))
	ctx := context.Background()
	op, err := b.store.OperatorCreate(ctx, &store.OperatorCreateParams{ID: uuid.NewString(), Name: "widgets", Namespace: "widgets-" + engine,
		ChartRepository: repo.URL, ChartName: "widget-operator", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: "1.0.0", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ns, release := "widgets-"+engine, "widgets-"+engine
	b.addLive(op, "1.0.0", ns, release, "dev-1")
	runningRelease(t, srv.Config, ns, release)

	if n := b.rollouts.HealthRound(ctx); n != 1 {
		t.Fatalf("the health round checked %d releases, want 1", n)
	}
	var oh api.OperatorHealth
	r := b.do("GET", "/api/v1/operators/widgets/health", b.viewer(), nil)
	expect(t, "operator health", r, http.StatusOK)
	r.json(t, &oh)
	if diff := designtest.Types(designtest.Load(t, designHealthFile), designtest.Generic(t, r.body)); len(diff) != 0 {
		t.Fatalf("the answer differs from the design's example in type: %v\n%s", diff, r.body)
	}
	if len(oh.Clusters) != 1 {
		t.Fatalf("clusters: %s", r.body)
	}
	c := oh.Clusters[0]
	if oh.OverallHealth != api.Healthy || c.ClusterName != "dev-1" || c.Health != api.Healthy || c.ControllerPods != 1 ||
		c.WebhookStatus != api.WebhookAvailable || c.CRDReconciliation != api.ReconciliationActive ||
		c.Pods.Total != 1 || c.Webhooks.Healthy != 1 || c.CRDs.Resources != 1 || time.Since(c.LastChecked) > time.Minute {
		t.Fatalf("the check of a running release: %s", r.body)
	}

	r = b.do("GET", "/api/v1/clusters/dev-1/operators/widgets/health", b.viewer(), nil)
	expect(t, "operator health on dev-1", r, http.StatusOK)
	if diff := designtest.Types(designClusterEntry(t), designtest.Generic(t, r.body)); len(diff) != 0 {
		t.Fatalf("one cluster's answer differs from the design's entry in type: %v\n%s", diff, r.body)
	}
	var one api.ClusterOperatorHealth
	r.json(t, &one)
	if one.OperatorName != "widgets" || one.ClusterName != "dev-1" || one.ControllerPods != 1 || one.WebhookStatus != api.WebhookAvailable ||
		one.CRDReconciliation != api.ReconciliationActive || !one.LastChecked.Equal(c.LastChecked) {
		t.Fatalf("one cluster: %s", r.body)
	}
}

// runningRelease makes release in ns look installed and running on the cluster at cfg: a
// controller pod Running and Ready (its status written by the test: no kubelet here), a
// ValidatingWebhookConfiguration of the release calling a TLS server of the test, and one custom
// resource of the chart's CRD (Widget).
func runningRelease(t *testing.T, cfg *rest.Config, ns, release string) {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cfg)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: release + "-0", Labels: map[string]string{health.InstanceLabel: release}},
		Spec:       corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "manager", Image: "example.com/widgets:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	webhookOf(t, kube, release)
	widgetOf(t, cfg, ns)
}

// webhookOf registers a validating webhook of release served by a TLS server of the test, which
// answers every review allowed. Its rule names a resource nothing creates.
func webhookOf(t *testing.T, kube kubernetes.Interface, release string) {
	t.Helper()
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIVersion, Kind string
			Request          struct{ UID string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": in.APIVersion, "kind": in.Kind,
			"response": map[string]any{"uid": in.Request.UID, "allowed": true}})
	}))
	t.Cleanup(hook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: release, Labels: map[string]string{health.InstanceLabel: release}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.health.test.slipway.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/validate"), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"health.test.slipway.dev"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}},
			}},
		}},
	}
	webhooks := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := webhooks.Create(context.Background(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = webhooks.Delete(context.Background(), release, metav1.DeleteOptions{}) })
}

// widgetOf installs the chart's Widget CRD (unless there) and creates one Widget in ns.
func widgetOf(t *testing.T, cfg *rest.Config, ns string) {
	t.Helper()
	ctx := context.Background()
	crds := apiextclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	crd := charttest.Widget(charttest.Compatible)
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	testenv.Eventually(tctx, t, "the Widget CRD established", func() (bool, error) {
		got, err := crds.Get(tctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %v", got.Status.Conditions)
	})
	gvr := schema.GroupVersionResource{Group: charttest.Group, Version: "v1alpha1", Resource: crd.Spec.Names.Plural}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": charttest.Group + "/v1alpha1", "kind": crd.Spec.Names.Kind,
		"metadata": map[string]any{"name": "w1", "namespace": ns}, "spec": map[string]any{"size": int64(1)},
	}}
	if _, err := dynamic.NewForConfigOrDie(cfg).Resource(gvr).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestOperatorHealthOpenAPI: the API's document describes both health answers with the
// design's types: controllerPods an integer, webhookStatus and crdReconciliation strings with
// their words, lastChecked a date-time; the per-cluster answer with operatorName beside them.
func TestOperatorHealthOpenAPI(t *testing.T) {
	b := setup(t, "sqlite")
	r := b.do("GET", "/api/v1/openapi.json", b.viewer(), nil)
	expect(t, "openapi.json", r, http.StatusOK)
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(path string) *openapi3.Schema {
		t.Helper()
		op := doc.Paths.Value(path)
		if op == nil || op.Get == nil || op.Get.Responses.Value("200") == nil {
			t.Fatalf("%s: no GET answering 200", path)
		}
		mt := op.Get.Responses.Value("200").Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			t.Fatalf("%s: no JSON schema", path)
		}
		return mt.Schema.Value
	}
	entry := func(where string, s *openapi3.Schema) {
		t.Helper()
		for key, want := range map[string]string{"clusterName": "string", "health": "string", "controllerPods": "integer",
			"webhookStatus": "string", "crdReconciliation": "string", "lastChecked": "string",
			"pods": "object", "webhooks": "object", "crds": "object"} {
			p := s.Properties[key]
			if p == nil || p.Value == nil || !p.Value.Type.Is(want) {
				t.Errorf("%s.%s: want type %s", where, key, want)
			}
		}
		enum := func(key string) []any { return s.Properties[key].Value.Enum }
		if !slices.Equal(enum("webhookStatus"), []any{"Available", "Unavailable", "NotConfigured", "Unknown"}) ||
			!slices.Equal(enum("crdReconciliation"), []any{"Active", "Failing", "Stale", "NoResources", "Unknown"}) {
			t.Errorf("%s: enums %v, %v", where, enum("webhookStatus"), enum("crdReconciliation"))
		}
		if f := s.Properties["lastChecked"].Value.Format; f != "date-time" {
			t.Errorf("%s.lastChecked format %q", where, f)
		}
	}
	all := answer("/api/v1/operators/{name}/health")
	for _, key := range []string{"operatorName", "overallHealth"} {
		if p := all.Properties[key]; p == nil || !p.Value.Type.Is("string") {
			t.Errorf("%s: want a string", key)
		}
	}
	clusters := all.Properties["clusters"]
	if clusters == nil || !clusters.Value.Type.Is("array") || clusters.Value.Items == nil {
		t.Fatalf("clusters: want an array")
	}
	entry("clusters[]", clusters.Value.Items.Value)
	one := answer("/api/v1/clusters/{cluster}/operators/{name}/health")
	if p := one.Properties["operatorName"]; p == nil || !p.Value.Type.Is("string") {
		t.Error("one cluster: operatorName: want a string")
	}
	entry("one cluster", one)
}
