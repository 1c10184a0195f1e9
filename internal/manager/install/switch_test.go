package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// TestSwitchAndSwitchBack installs the operator with its webhook as blue (1.1.0) and green
// (1.2.0), blue with a StatefulSet of 2 besides its Deployment, adds a CRD whose conversion
// webhook calls blue's Service, and checks that Switch
// points blue's webhooks (one green has, one it lacks) and the conversion webhook at green and
// scales blue to 0, leaving green and the custom resources untouched; that a second Switch
// changes nothing; that SwitchBack restores every clientConfig exactly, blue's replicas, and
// removes the annotations; and that blue keeps working once green is uninstalled.
func TestSwitchAndSwitchBack(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	kc, dc := clients(t)
	ac, err := apiextensionsclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	blue := Side{Namespace: "op-blue", Release: "widgets"}
	green := Side{Namespace: "op-green", Release: "widgets-green"}
	const crNS = "crs-switch"
	blueCA, greenCA := caBundle(t, "blue"), caBundle(t, "green")
	blueSvc, greenSvc := blue.Release+"-"+chartName+"-webhook", green.Release+"-"+chartName+"-webhook"

	_, err = Switch(ctx, env.Config, blue, green)
	wantInvalid(t, err, "blue.release", "notFound")
	if _, err := Install(ctx, env.Config, Release{Name: blue.Release, Namespace: blue.Namespace, Timeout: 45 * time.Second,
		Values: map[string]any{"caBundle": blueCA}, Chart: loadChart(t, "1.1.0", charttest.Compatible, switchable(true), charttest.WithWebhook())}); err != nil {
		t.Fatal(err)
	}
	_, err = Switch(ctx, env.Config, blue, green)
	wantInvalid(t, err, "green.release", "notFound")
	installGreen := func() {
		t.Helper()
		if _, err := Install(ctx, env.Config, Release{Name: green.Release, Namespace: green.Namespace, Timeout: 45 * time.Second,
			Values: map[string]any{"caBundle": greenCA}, Chart: loadChart(t, "1.2.0", charttest.Compatible, switchable(false), charttest.WithWebhook())}); err != nil {
			t.Fatal(err)
		}
	}
	installGreen()

	// A CRD converting through blue's webhook Service, and one through a Service of blue's
	// namespace that is not the release's: only the first is switched.
	if _, err := kc.CoreV1().Services(blue.Namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: blue.Namespace},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := newSession(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applyCRDs(ctx, s, []*unstructured.Unstructured{
		conversionCRD(t, "switchers", "Switcher", blue.Namespace, blueSvc, blueCA),
		conversionCRD(t, "bystanders", "Bystander", blue.Namespace, "bystander", blueCA),
	}); err != nil {
		t.Fatal(err)
	}
	switchers := schema.GroupVersionResource{Group: charttest.Group, Version: "v1alpha1", Resource: "switchers"}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, namespace(crNS), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": charttest.Group + "/v1alpha1", "kind": "Switcher",
			"metadata": map[string]any{"name": fmt.Sprintf("s%d", i), "namespace": crNS},
			"spec":     map[string]any{"size": int64(i + 1), "color": "yellow"},
		}}
		if _, err := dc.Resource(switchers).Namespace(crNS).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	crs := func() map[string]string {
		t.Helper()
		list, err := dc.Resource(switchers).Namespace(crNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, u := range list.Items {
			spec, _ := json.Marshal(u.Object["spec"])
			out[u.GetName()] = u.GetResourceVersion() + " " + string(spec)
		}
		return out
	}

	adm := kc.AdmissionregistrationV1()
	store := func() *appsv1.StatefulSet {
		t.Helper()
		return must[*appsv1.StatefulSet](t)(kc.AppsV1().StatefulSets(blue.Namespace).Get(ctx, blue.Release+"-"+chartName+"-store", metav1.GetOptions{}))
	}
	crdOf := func(name string) *apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		return must[*apiextensionsv1.CustomResourceDefinition](t)(ac.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name+"."+charttest.Group, metav1.GetOptions{}))
	}
	blueVWC := func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		t.Helper()
		return must[*admissionregistrationv1.ValidatingWebhookConfiguration](t)(adm.ValidatingWebhookConfigurations().Get(ctx, blue.Release+"-"+chartName, metav1.GetOptions{}))
	}
	blueMWC := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		t.Helper()
		return must[*admissionregistrationv1.MutatingWebhookConfiguration](t)(adm.MutatingWebhookConfigurations().Get(ctx, blue.Release+"-"+chartName+"-defaulter", metav1.GetOptions{}))
	}
	greenVWC := func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		t.Helper()
		return must[*admissionregistrationv1.ValidatingWebhookConfiguration](t)(adm.ValidatingWebhookConfigurations().Get(ctx, green.Release+"-"+chartName, metav1.GetOptions{}))
	}
	vwc0, mwc0, crd0, bystander0, green0 := blueVWC(), blueMWC(), crdOf("switchers"), crdOf("bystanders"), greenVWC()
	greenDeploy0 := operatorDeployment(t, kc, green.Namespace, green.Release)
	crs0 := crs()

	// Green without its webhook Service: nothing changes, the error names the Service.
	if err := kc.CoreV1().Services(green.Namespace).Delete(ctx, greenSvc, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = Switch(ctx, env.Config, blue, green)
	if err == nil || !strings.Contains(err.Error(), "has no Service "+green.Namespace+"/"+greenSvc) {
		t.Fatalf("switch to a green without its Service: %v", err)
	}
	if rv := blueVWC().ResourceVersion; rv != vwc0.ResourceVersion {
		t.Fatalf("a refused switch changed blue's ValidatingWebhookConfiguration")
	}
	installGreen() // puts the Service back

	res, err := Switch(ctx, env.Config, blue, green)
	if err != nil {
		t.Fatal(err)
	}
	if res.Webhooks != 2 || res.CRDs != 1 || res.Scaled != 2 || res.APIRequests == 0 {
		t.Fatalf("switch result %+v, want 2 webhooks, 1 CRD, 2 scaled", res)
	}
	vwc1, mwc1 := blueVWC(), blueMWC()
	if got, want := vwc1.Webhooks[0].ClientConfig, greenVWC().Webhooks[0].ClientConfig; !reflect.DeepEqual(got, want) {
		t.Fatalf("blue's validating webhook calls %s, want green's %s", clientConfig(got), clientConfig(want))
	}
	if got := clientConfig(mwc1.Webhooks[0].ClientConfig); got != "op-green/"+greenSvc+":443/mutate ca="+greenCA {
		t.Fatalf("blue's mutating webhook (green has none of its name) calls %s", got)
	}
	conv := crdOf("switchers").Spec.Conversion.Webhook.ClientConfig
	if conv.Service == nil || conv.Service.Namespace != green.Namespace || conv.Service.Name != greenSvc ||
		*conv.Service.Path != "/convert" || string(conv.CABundle) != greenCA {
		t.Fatalf("switchers' conversion webhook after the switch: %+v ca %q", conv.Service, conv.CABundle)
	}
	if !reflect.DeepEqual(withoutClientConfig(crdOf("switchers").Spec), withoutClientConfig(crd0.Spec)) {
		t.Fatalf("the switch changed switchers' spec beyond the conversion clientConfig")
	}
	for what, a := range map[string]map[string]string{"VWC": vwc1.Annotations, "MWC": mwc1.Annotations, "CRD": crdOf("switchers").Annotations} {
		if !strings.Contains(a[SwitchedFromAnnotation], `"release":"widgets-green"`) {
			t.Fatalf("%s annotation %s: %q", what, SwitchedFromAnnotation, a[SwitchedFromAnnotation])
		}
	}
	d := operatorDeployment(t, kc, blue.Namespace, blue.Release)
	if *d.Spec.Replicas != 0 || d.Annotations[ReplicasBeforeSwitchAnnotation] != "1" {
		t.Fatalf("blue's Deployment: %d replicas, annotation %q", *d.Spec.Replicas, d.Annotations[ReplicasBeforeSwitchAnnotation])
	}
	if st := store(); *st.Spec.Replicas != 0 || st.Annotations[ReplicasBeforeSwitchAnnotation] != "2" {
		t.Fatalf("blue's StatefulSet: %d replicas, annotation %q", *st.Spec.Replicas, st.Annotations[ReplicasBeforeSwitchAnnotation])
	}
	untouched := func(when string) {
		t.Helper()
		if g := greenVWC(); g.ResourceVersion != green0.ResourceVersion {
			t.Fatalf("%s: green's ValidatingWebhookConfiguration changed", when)
		}
		if g := operatorDeployment(t, kc, green.Namespace, green.Release); g.ResourceVersion != greenDeploy0.ResourceVersion || *g.Spec.Replicas != 1 {
			t.Fatalf("%s: green's Deployment changed", when)
		}
		if b := crdOf("bystanders"); b.ResourceVersion != bystander0.ResourceVersion {
			t.Fatalf("%s: the CRD converting through a Service not of blue's release changed", when)
		}
		if got := crs(); !maps.Equal(got, crs0) {
			t.Fatalf("%s: custom resources changed:\nbefore %v\nafter  %v", when, crs0, got)
		}
	}
	untouched("after the switch")

	// Again: nothing to do.
	versions := func() string {
		t.Helper()
		return strings.Join([]string{blueVWC().ResourceVersion, blueMWC().ResourceVersion, crdOf("switchers").ResourceVersion,
			operatorDeployment(t, kc, blue.Namespace, blue.Release).ResourceVersion, store().ResourceVersion}, " ")
	}
	before := versions()
	if res, err := Switch(ctx, env.Config, blue, green); err != nil || res.Webhooks+res.CRDs+res.Scaled != 0 {
		t.Fatalf("second switch: %+v, %v; want nothing changed", res, err)
	}
	if after := versions(); after != before {
		t.Fatalf("second switch wrote: resourceVersions %s, then %s", before, after)
	}

	res, err = SwitchBack(ctx, env.Config, blue, green)
	if err != nil {
		t.Fatal(err)
	}
	if res.Webhooks != 2 || res.CRDs != 1 || res.Scaled != 2 {
		t.Fatalf("switch back result %+v, want 2 webhooks, 1 CRD, 2 scaled", res)
	}
	restored := func(when string) {
		t.Helper()
		vwc, mwc, crd := blueVWC(), blueMWC(), crdOf("switchers")
		if !reflect.DeepEqual(vwc.Webhooks, vwc0.Webhooks) || !maps.Equal(vwc.Annotations, vwc0.Annotations) {
			t.Fatalf("%s: blue's ValidatingWebhookConfiguration is not as it was:\n%s\nwas\n%s", when, clientConfig(vwc.Webhooks[0].ClientConfig), clientConfig(vwc0.Webhooks[0].ClientConfig))
		}
		if !reflect.DeepEqual(mwc.Webhooks, mwc0.Webhooks) || !maps.Equal(mwc.Annotations, mwc0.Annotations) {
			t.Fatalf("%s: blue's MutatingWebhookConfiguration is not as it was", when)
		}
		spec, _ := json.Marshal(crd.Spec)
		spec0, _ := json.Marshal(crd0.Spec)
		if string(spec) != string(spec0) || !maps.Equal(crd.Annotations, crd0.Annotations) {
			t.Fatalf("%s: switchers' CRD is not as it was:\n%s\nwas\n%s", when, spec, spec0)
		}
		d := operatorDeployment(t, kc, blue.Namespace, blue.Release)
		if *d.Spec.Replicas != 1 || d.Status.AvailableReplicas != 1 || d.Annotations[ReplicasBeforeSwitchAnnotation] != "" {
			t.Fatalf("%s: blue's Deployment: %d replicas, %d available, annotation %q", when, *d.Spec.Replicas,
				d.Status.AvailableReplicas, d.Annotations[ReplicasBeforeSwitchAnnotation])
		}
		if st := store(); *st.Spec.Replicas != 2 || st.Status.ReadyReplicas != 2 || st.Annotations[ReplicasBeforeSwitchAnnotation] != "" {
			t.Fatalf("%s: blue's StatefulSet: %d replicas, %d ready, annotation %q", when, *st.Spec.Replicas,
				st.Status.ReadyReplicas, st.Annotations[ReplicasBeforeSwitchAnnotation])
		}
	}
	restored("after switching back")
	untouched("after switching back")
	before = versions()
	if res, err := SwitchBack(ctx, env.Config, blue, green); err != nil || res.Webhooks+res.CRDs+res.Scaled != 0 {
		t.Fatalf("second switch back: %+v, %v; want nothing changed", res, err)
	}
	if after := versions(); after != before {
		t.Fatalf("second switch back wrote: resourceVersions %s, then %s", before, after)
	}

	if err := Uninstall(ctx, env.Config, green.Release, green.Namespace); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Get(ctx, green.Release+"-"+chartName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("green's ValidatingWebhookConfiguration after its uninstall: %v", err)
	}
	restored("after green's uninstall")
	if after := versions(); after != before {
		t.Fatalf("green's uninstall changed blue: resourceVersions %s, then %s", before, after)
	}
	if got := crs(); !maps.Equal(got, crs0) {
		t.Fatalf("green's uninstall changed custom resources")
	}
	_, err = Switch(ctx, env.Config, blue, green)
	wantInvalid(t, err, "green.release", "notFound")
}

// TestSwitchInvalidSides checks the sides are checked before anything is read.
func TestSwitchInvalidSides(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	for _, c := range []struct {
		blue, green Side
		field       string
	}{
		{Side{"op", "a"}, Side{"op", "b"}, "green.namespace"},
		{Side{"op", "a"}, Side{"op-green", "a"}, "green.release"},
		{Side{"Op", "a"}, Side{"op-green", "b"}, "blue.namespace"},
		{Side{"op", ""}, Side{"op-green", "b"}, "blue.release"},
	} {
		_, err := Switch(ctx, env.Config, c.blue, c.green)
		wantInvalid(t, err, c.field, "")
		_, err = SwitchBack(ctx, env.Config, c.blue, c.green)
		wantInvalid(t, err, c.field, "")
	}
}

// switchable keeps the chart's webhooks from ever being called (no namespace has the label they
// select: other tests create widgets at the same time), gives them .Values.caBundle, and with
// extras adds a MutatingWebhookConfiguration calling the same Service and a StatefulSet of 2.
func switchable(extras bool) func(charttest.ChartFiles) {
	const never = "  namespaceSelector:\n    matchLabels:\n      slipway.dev/switch-test: never\n"
	return func(files charttest.ChartFiles) {
		w := files["templates/webhook.yaml"]
		w = strings.Replace(w, "  failurePolicy: Fail\n", "  failurePolicy: Fail\n"+never, 1)
		w = strings.Replace(w, "      path: /validate\n", "      path: /validate\n    caBundle: {{ .Values.caBundle | b64enc }}\n", 1)
		if extras {
			files["templates/statefulset.yaml"] = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ include "op.name" . }}-store
  namespace: {{ .Release.Namespace }}
spec:
  replicas: 2
  serviceName: {{ include "op.name" . }}-store
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}-store
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}-store
    spec:
      containers:
      - name: store
        image: registry.example/widget-store:v1
`
			w += `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: {{ include "op.name" . }}-defaulter
webhooks:
- name: default.widgets.charttest.slipway.dev
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
` + never + `  clientConfig:
    service:
      name: {{ include "op.name" . }}-webhook
      namespace: {{ .Release.Namespace }}
      path: /mutate
  rules:
  - apiGroups: ["charttest.slipway.dev"]
    apiVersions: ["v1alpha1"]
    operations: ["CREATE"]
    resources: ["widgets"]
`
		}
		files["templates/webhook.yaml"] = w
	}
}

// caBundle is a self-signed certificate (PEM) named cn.
func caBundle(t *testing.T, cn string) string {
	t.Helper()
	cert, _, err := selfsigned.Generate(time.Now(), cn, []string{cn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(cert)
}

// conversionCRD is a charttest CRD whose conversion webhook calls service in namespace.
func conversionCRD(t *testing.T, plural, kind, namespace, service, ca string) *unstructured.Unstructured {
	t.Helper()
	crd := charttest.NewCRD(plural, kind, charttest.Compatible)
	path := "/convert"
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service:  &apiextensionsv1.ServiceReference{Namespace: namespace, Name: service, Path: &path},
				CABundle: []byte(ca),
			},
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// withoutClientConfig is spec as JSON with the conversion webhook's clientConfig left out.
func withoutClientConfig(spec apiextensionsv1.CustomResourceDefinitionSpec) string {
	spec = *spec.DeepCopy()
	if spec.Conversion != nil && spec.Conversion.Webhook != nil {
		spec.Conversion.Webhook.ClientConfig = nil
	}
	b, _ := json.Marshal(spec)
	return string(b)
}

// clientConfig is an admission clientConfig as namespace/name:port/path ca=<bundle>.
func clientConfig(cc admissionregistrationv1.WebhookClientConfig) string {
	if cc.Service == nil {
		return fmt.Sprintf("url %v ca=%s", cc.URL, cc.CABundle)
	}
	var port int32
	var path string
	if cc.Service.Port != nil {
		port = *cc.Service.Port
	}
	if cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	return fmt.Sprintf("%s/%s:%d%s ca=%s", cc.Service.Namespace, cc.Service.Name, port, path, cc.CABundle)
}

// must is v, failing t on err.
func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestSwitchBackWaitsForBlue switches, makes blue's pods unschedulable, and checks SwitchBack
// fails within its context naming blue's Deployment and why, leaving the webhook on green;
// once blue can run again, SwitchBack completes.
func TestSwitchBackWaitsForBlue(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	kc, _ := clients(t)
	blue := Side{Namespace: "op-gizmos", Release: "gizmos"}
	green := Side{Namespace: "op-gizmos-green", Release: "gizmos-green"}
	for _, sd := range []Side{blue, green} {
		if _, err := Install(ctx, env.Config, Release{Name: sd.Release, Namespace: sd.Namespace, Timeout: 45 * time.Second,
			Values: map[string]any{"caBundle": caBundle(t, sd.Release)}, Chart: loadChart(t, "1.1.0", charttest.Compatible, switchable(false), charttest.WithWebhook())}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Switch(ctx, env.Config, blue, green); err != nil {
		t.Fatal(err)
	}
	deployments := kc.AppsV1().Deployments(blue.Namespace)
	name := blue.Release + "-" + chartName
	nodeSelector := func(patch string) {
		t.Helper()
		if _, err := deployments.Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"nodeSelector":`+patch+`}}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodeSelector(`{"slipway.dev/no-such-node":"true"}`)

	// Long enough for the scale back, the new pod and the scheduler's verdict on a loaded machine.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := SwitchBack(short, env.Config, blue, green)
	var nr *NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("switch back to an unschedulable blue: %v (%T), want *NotReadyError", err, err)
	}
	if !strings.Contains(err.Error(), "the webhooks still call green") {
		t.Fatalf("message %q does not say the webhooks stay on green", err)
	}
	if len(nr.Resources) != 1 || nr.Resources[0].Name != name || nr.Resources[0].Reason != "Unschedulable" || nr.Release != blue.Release || nr.Revision != 1 {
		t.Fatalf("not ready: %+v", nr)
	}
	vwc, err := kc.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc := vwc.Webhooks[0].ClientConfig.Service; svc.Namespace != green.Namespace || vwc.Annotations[SwitchedFromAnnotation] == "" {
		t.Fatalf("after a failed switch back the webhook calls %s/%s, want green's still", svc.Namespace, svc.Name)
	}

	nodeSelector("null")
	res, err := SwitchBack(ctx, env.Config, blue, green)
	if err != nil {
		t.Fatal(err)
	}
	if res.Webhooks != 1 || res.Scaled != 0 {
		t.Fatalf("switch back after a failed one: %+v, want 1 webhook and blue already scaled", res)
	}
	d := operatorDeployment(t, kc, blue.Namespace, blue.Release)
	if d.Status.AvailableReplicas != 1 {
		t.Fatalf("blue after switching back: %d available", d.Status.AvailableReplicas)
	}
}

// TestSwitchSpans switches and switches back with an in-memory span recorder and a transport that
// sees every request: the calls run in operator.switch and operator.switch_back, every request
// carries the trace of one of them, and the requests counted are the requests sent. CRDs are
// read one a page, so the conversion webhook is found across pages. It replaces the global
// tracer provider and crdPage, so it does not run in parallel.
func TestSwitchSpans(t *testing.T) {
	ctx := testContext(t)
	blue := Side{Namespace: "op-traced-switch", Release: "traced-switch"}
	green := Side{Namespace: "op-traced-switch-green", Release: "traced-switch-green"}
	for _, sd := range []Side{blue, green} {
		if _, err := Install(ctx, env.Config, Release{Name: sd.Release, Namespace: sd.Namespace, Timeout: 45 * time.Second,
			Values: map[string]any{"caBundle": caBundle(t, sd.Release)}, Chart: loadChart(t, "1.1.0", charttest.Compatible, switchable(false), charttest.WithWebhook())}); err != nil {
			t.Fatal(err)
		}
	}
	// One CRD a page: the conversion webhook's CRD is found on one of several pages.
	s, err := newSession(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ca := caBundle(t, "tracers")
	if _, err := applyCRDs(ctx, s, []*unstructured.Unstructured{
		conversionCRD(t, "tracers", "Tracer", blue.Namespace, blue.Release+"-"+chartName+"-webhook", ca),
	}); err != nil {
		t.Fatal(err)
	}
	crds, err := countCRDs(ctx, s)
	if err != nil || crds < 3 {
		t.Fatalf("%d CRDs, %v: want several to read one a page", crds, err)
	}
	page := crdPage
	crdPage = 1
	t.Cleanup(func() { crdPage = page })

	rec := spantest.Record(t)
	var mu sync.Mutex
	var sent []trace.TraceID
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
			mu.Lock()
			sent = append(sent, sc.TraceID())
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	var counted int64
	for _, call := range []func(context.Context, *rest.Config, Side, Side) (*SwitchResult, error){Switch, SwitchBack} {
		res, err := call(ctx, cfg, blue, green)
		if err != nil {
			t.Fatal(err)
		}
		if res.Webhooks != 1 || res.CRDs != 1 || res.Scaled != 1 {
			t.Fatalf("result %+v, want 1 webhook, 1 CRD, 1 scaled", res)
		}
		counted += res.APIRequests
	}
	var traces []trace.TraceID
	for _, s := range rec.Ended() {
		if s.Name() == spanOperatorSwitch || s.Name() == spanOperatorSwitchBack {
			traces = append(traces, s.SpanContext().TraceID())
		}
	}
	if len(traces) != 2 {
		t.Fatalf("%d switch spans, want operator.switch and operator.switch_back", len(traces))
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(len(sent)) != counted || counted == 0 {
		t.Fatalf("%d requests sent, %d counted", len(sent), counted)
	}
	for i, id := range sent {
		if !slices.Contains(traces, id) {
			t.Fatalf("request %d carried trace %v, not a switch's", i, id)
		}
	}
}

// TestRetryConflicts checks a step that meets a 409 Conflict runs again, and gives up after
// maxSwitchAttempts saying why.
func TestRetryConflicts(t *testing.T) {
	t.Parallel()
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "deployments"}, "x", errors.New("changed"))
	calls := 0
	if err := retryConflicts(func() error {
		if calls++; calls < 3 {
			return conflict
		}
		return nil
	}); err != nil || calls != 3 {
		t.Fatalf("%d calls, %v; want 3 and success", calls, err)
	}
	calls = 0
	err := retryConflicts(func() error { calls++; return conflict })
	if !apierrors.IsConflict(err) || calls != maxSwitchAttempts || !strings.Contains(err.Error(), "kept changing") {
		t.Fatalf("%d calls, %v", calls, err)
	}
}

// countCRDs counts the cluster's CRDs.
func countCRDs(ctx context.Context, s *session) (int, error) {
	list, err := s.dynamic.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}
