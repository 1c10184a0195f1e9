package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// TestUpgradeAndRollbackKeepCustomResources installs 1.0.0, creates custom resources, upgrades
// to 1.1.0 with other values, creates one more that only 1.1.0's schema allows, rolls back, and
// checks the chart and values of 1.0.0 are back while every custom resource is untouched (spec
// byte for byte, resourceVersion unchanged), then uninstalls and checks the CRDs and custom
// resources are still there.
func TestUpgradeAndRollbackKeepCustomResources(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	kc, dc := clients(t)
	const name, ns, crNS = "lifecycle", "op-lifecycle", "crs-lifecycle"

	res, err := Install(ctx, env.Config, Release{Name: name, Namespace: ns, Timeout: 45 * time.Second,
		Chart: loadChart(t, "1.0.0", charttest.Base, nil, charttest.WithTemplateCRD())})
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 1 || res.Version != "1.0.0" || res.Upgrade || res.PreviousRevision != 0 ||
		!slices.Equal(res.CRDs, []string{"widgets." + charttest.Group}) || res.APIRequests == 0 {
		t.Fatalf("install result %+v", res)
	}
	d := operatorDeployment(t, kc, ns, name)
	if d.Status.AvailableReplicas != 1 || d.Labels["app.kubernetes.io/version"] != "v1.0.0" {
		t.Fatalf("after install: %d available, version %q", d.Status.AvailableReplicas, d.Labels["app.kubernetes.io/version"])
	}

	if _, err := kc.CoreV1().Namespaces().Create(ctx, namespace(crNS), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, spec := range []map[string]any{
		{"size": int64(1)},
		{"size": int64(42), "name": "abc", "color": "red", "legacy": "kept", "tls": map[string]any{"insecure": true}},
		{"size": int64(100), "count": int64(7), "color": "blue"},
	} {
		createWidget(t, dc, crNS, fmt.Sprintf("w%d", i), spec)
	}

	res, err = Install(ctx, env.Config, Release{Name: name, Namespace: ns, Timeout: 45 * time.Second,
		Chart:  loadChart(t, "1.1.0", charttest.Compatible, nil, charttest.WithTemplateCRD()),
		Values: map[string]any{"replicas": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 2 || res.Version != "1.1.0" || !res.Upgrade || res.PreviousRevision != 1 || res.PreviousVersion != "1.0.0" {
		t.Fatalf("upgrade result %+v", res)
	}
	d = operatorDeployment(t, kc, ns, name)
	if d.Status.AvailableReplicas != 2 || d.Labels["app.kubernetes.io/version"] != "v1.1.0" {
		t.Fatalf("after upgrade: %d available, version %q", d.Status.AvailableReplicas, d.Labels["app.kubernetes.io/version"])
	}
	// Only the 1.1.0 schema allows yellow and replicas; the rollback must keep that schema.
	createWidget(t, dc, crNS, "w-new", map[string]any{"size": int64(150), "color": "yellow", "replicas": int64(3)})
	before := widgetSnapshot(t, dc, crNS)

	res, err = Rollback(ctx, env.Config, name, ns, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 3 || res.Version != "1.0.0" || res.PreviousRevision != 2 || res.PreviousVersion != "1.1.0" {
		t.Fatalf("rollback result %+v", res)
	}
	d = operatorDeployment(t, kc, ns, name)
	if *d.Spec.Replicas != 1 || d.Labels["app.kubernetes.io/version"] != "v1.0.0" || d.Status.AvailableReplicas < 1 {
		t.Fatalf("after rollback: %d replicas (%d available), version %q", *d.Spec.Replicas, d.Status.AvailableReplicas, d.Labels["app.kubernetes.io/version"])
	}
	if after := widgetSnapshot(t, dc, crNS); !mapsEqual(before, after) {
		t.Fatalf("custom resources changed by the rollback:\nbefore %v\nafter  %v", before, after)
	}

	hist, err := History(ctx, env.Config, name, ns)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hist {
		got = append(got, fmt.Sprintf("%d %s %s", h.Revision, h.ChartVersion, h.Status))
	}
	if want := []string{"1 1.0.0 superseded", "2 1.1.0 superseded", "3 1.0.0 deployed"}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	_, err = Rollback(ctx, env.Config, name, ns, 99)
	wantInvalid(t, err, "revision", "notFound")
	if st, err := Status(ctx, env.Config, name, ns); err != nil || st.Revision != 3 || st.Values["replicas"] != nil {
		t.Fatalf("status %+v, %v: want revision 3 with 1.0.0's values (no replicas override)", st, err)
	}

	if err := Uninstall(ctx, env.Config, name, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.AppsV1().Deployments(ns).Get(ctx, name+"-"+chartName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the operator's Deployment after uninstall: %v, want NotFound", err)
	}
	for _, crd := range []string{"widgets." + charttest.Group, "gadgets." + charttest.Group} {
		if _, err := dc.Resource(crdResource).Get(ctx, crd, metav1.GetOptions{}); err != nil {
			t.Fatalf("CRD %s after uninstall: %v", crd, err)
		}
	}
	if after := widgetSnapshot(t, dc, crNS); !mapsEqual(before, after) {
		t.Fatalf("custom resources changed by the uninstall:\nbefore %v\nafter  %v", before, after)
	}
	_, err = Status(ctx, env.Config, name, ns)
	wantInvalid(t, err, "release", "notFound")
}

// TestFailedInstallSaysWhatIsNotReady installs a chart whose pods cannot be scheduled: the
// install fails within its timeout naming the Deployment and its pod's reason; then a good
// chart installs over the failed revision.
func TestFailedInstallSaysWhatIsNotReady(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const name, ns = "broken", "op-broken"

	// The timeout covers the apply, the pod's creation and the scheduler's verdict on a loaded machine.
	res, err := Install(ctx, env.Config, Release{Name: name, Namespace: ns, Timeout: 10 * time.Second,
		Chart: loadChart(t, "1.1.0", charttest.Compatible, unschedulable)})
	var nr *NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("error %v (%T), want *NotReadyError", err, err)
	}
	if len(nr.Resources) != 1 {
		t.Fatalf("not ready: %+v, want the Deployment only", nr.Resources)
	}
	r := nr.Resources[0]
	if r.Kind != "Deployment" || r.Name != name+"-"+chartName || r.Namespace != ns || r.Reason != "Unschedulable" {
		t.Fatalf("not ready: %+v", r)
	}
	for _, want := range []string{"release broken (namespace op-broken, revision 1) not ready (timeout 10s): ",
		"Deployment op-broken/broken-widget-operator: 0/1 replicas available", "pod broken-widget-operator-", "Unschedulable: 0/"} {
		if !contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err, want)
		}
	}
	if res == nil || res.Revision != 1 || res.APIRequests == 0 {
		t.Fatalf("result with the error: %+v", res)
	}
	if st, err := Status(ctx, env.Config, name, ns); err != nil || st.Status != "failed" {
		t.Fatalf("status %+v, %v: want failed", st, err)
	}

	res, err = Install(ctx, env.Config, Release{Name: name, Namespace: ns, Timeout: 45 * time.Second,
		Chart: loadChart(t, "1.1.0", charttest.Compatible, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 2 || !res.Upgrade || res.PreviousRevision != 0 {
		t.Fatalf("install over a failed revision: %+v", res)
	}
}

// TestFailingHookJobSaysWhy installs a chart whose post-install hook Job has kwok's fail label
// (controlplane.FailLabel): its pod fails with exit code 1, and the install fails naming the Job
// and the pod's exit.
func TestFailingHookJobSaysWhy(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const name, ns = "hooked", "op-hooked"
	withFailingHook := func(files charttest.ChartFiles) {
		files["templates/migrate.yaml"] = `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  namespace: {{ .Release.Namespace }}
  annotations:
    helm.sh/hook: post-install,post-upgrade
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        ` + controlplane.FailLabel + `: "true"
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: registry.example/widget-migrate:v1
`
	}
	_, err := Install(ctx, env.Config, Release{Name: name, Namespace: ns, Timeout: 30 * time.Second,
		Chart: loadChart(t, "1.1.0", charttest.Compatible, withFailingHook)})
	var nr *NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("error %v (%T), want *NotReadyError", err, err)
	}
	if len(nr.Resources) != 1 || nr.Resources[0].Kind != "Job" || nr.Resources[0].Name != name+"-migrate" || nr.Resources[0].Reason != "Error" {
		t.Fatalf("not ready: %+v, want the hook Job failed with Error", nr.Resources)
	}
	for _, want := range []string{"Job op-hooked/hooked-migrate: failed: BackoffLimitExceeded",
		"container migrate terminated (Error, exit code 1): failed by the kwok stage pod-fail"} {
		if !contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err, want)
		}
	}
}

// TestInvalidCalls checks the errors a caller can fix.
func TestInvalidCalls(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ch := loadChart(t, "1.1.0", charttest.Compatible, nil)
	_, err := Install(ctx, env.Config, Release{Name: "Bad_Name", Namespace: "x", Chart: ch})
	wantInvalid(t, err, "name", "invalid")
	_, err = Install(ctx, env.Config, Release{Name: "ok", Namespace: "", Chart: ch})
	wantInvalid(t, err, "namespace", "invalid")
	_, err = Install(ctx, env.Config, Release{Name: "ok", Namespace: "x"})
	wantInvalid(t, err, "chart", "required")
	_, err = Rollback(ctx, env.Config, "nothing-here", "default", 0)
	wantInvalid(t, err, "release", "notFound")
	_, err = History(ctx, env.Config, "nothing-here", "default")
	wantInvalid(t, err, "release", "notFound")
	if err := Uninstall(ctx, env.Config, "nothing-here", "default"); err != nil {
		t.Fatalf("uninstalling a release that does not exist: %v", err)
	}
}

func createWidget(t *testing.T, dc dynamicClient, ns, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": charttest.Group + "/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	if _, err := dc.Resource(widgets).Namespace(ns).Create(testContext(t), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// widgetSnapshot is every Widget of ns: name → resourceVersion and spec as JSON.
func widgetSnapshot(t *testing.T, dc dynamicClient, ns string) map[string]string {
	t.Helper()
	list, err := dc.Resource(widgets).Namespace(ns).List(testContext(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, u := range list.Items {
		spec, err := json.Marshal(u.Object["spec"])
		if err != nil {
			t.Fatal(err)
		}
		out[u.GetName()] = u.GetResourceVersion() + " " + string(spec)
	}
	if len(out) != 4 {
		t.Fatalf("%d widgets in %s, want 4", len(out), ns)
	}
	return out
}

// TestInterruptedRevisionDoesNotBlock leaves a revision pending, as a replica that died during
// an upgrade does; the next upgrade and a rollback still run.
func TestInterruptedRevisionDoesNotBlock(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const name, ns = "interrupted", "op-interrupted"
	ch := loadChart(t, "1.1.0", charttest.Compatible, nil)
	for range 2 {
		if _, err := Install(ctx, env.Config, Release{Name: name, Namespace: ns, Chart: ch, Timeout: 45 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := newSession(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ac := s.actionConfig(ns)
	pend := func(status rcommon.Status) {
		last, err := lastRelease(ac, name)
		if err != nil {
			t.Fatal(err)
		}
		last.SetStatus(status, "a replica died here")
		if err := ac.Releases.Update(last); err != nil {
			t.Fatal(err)
		}
	}
	pend(rcommon.StatusPendingUpgrade)
	res, err := Install(ctx, env.Config, Release{Name: name, Namespace: ns, Chart: ch, Timeout: 45 * time.Second})
	if err != nil || res.Revision != 3 {
		t.Fatalf("upgrade after an interrupted one: %+v, %v", res, err)
	}
	pend(rcommon.StatusPendingRollback)
	if res, err = Rollback(ctx, env.Config, name, ns, 0); err != nil || res.Revision != 4 {
		t.Fatalf("rollback after an interrupted one: %+v, %v", res, err)
	}
	hist, err := History(ctx, env.Config, name, ns)
	if err != nil {
		t.Fatal(err)
	}
	if got := hist[2].Status + " " + hist[2].Description; got != "failed Interrupted while pending-rollback" {
		t.Fatalf("revision 3: %q", got)
	}
}
