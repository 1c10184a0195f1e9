package devenv

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The sample deployment's values leave out what cannot be checked honestly on kwok's simulated
// pods (admission webhooks served by a Service of pods that run no container) and what make dev
// created already (the build namespace); the release keeps the operator's RBAC, bound to the
// identity the operator runs under on the host.
func TestSampleRelease_ValuesRenderNoWebhooksAndTheOperatorsIdentity(t *testing.T) {
	dir, err := findChartDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := renderSampleRelease(dir, SampleDeploymentVersion, sampleDeploymentValues())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]string{}
	for _, o := range objs {
		kinds[o.GetKind()] = append(kinds[o.GetKind()], o.GetName())
		if ns := o.GetNamespace(); ns != "" && ns != SampleOperatorNamespace && ns != "slipway-builds" && ns != "slipway-catalyst-deployers" {
			t.Errorf("%s %s in namespace %s, want %s (or the build or deployer namespace)", o.GetKind(), o.GetName(), ns, SampleOperatorNamespace)
		}
		if o.GetLabels()["app.kubernetes.io/instance"] != SampleOperator {
			t.Errorf("%s %s lacks the instance label the health check selects by", o.GetKind(), o.GetName())
		}
	}
	for _, k := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Namespace"} {
		if len(kinds[k]) > 0 {
			t.Errorf("renders %s %v", k, kinds[k])
		}
	}
	if slices.Contains(kinds["ClusterRole"], "slipway-webapp") {
		t.Errorf("renders the webapp controller's role: %v", kinds["ClusterRole"])
	}
	for _, want := range []string{"slipway-common", "slipway-werfbundle", "slipway-catalyst"} {
		if !slices.Contains(kinds["ClusterRoleBinding"], want) {
			t.Errorf("ClusterRoleBindings %v, want %s", kinds["ClusterRoleBinding"], want)
		}
	}
	if d := kinds["Deployment"]; len(d) != 1 {
		t.Fatalf("Deployments %v, want the operator's", d)
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if r, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "replicas"); fmt.Sprint(r) != "1" {
				t.Errorf("replicas %v, want 1", r)
			}
		}
		if o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding" {
			subjects, _ := o.Object["subjects"].([]any)
			s, _ := subjects[0].(map[string]any)
			if len(subjects) != 1 || s["kind"] != "ServiceAccount" || s["namespace"] != SampleOperatorNamespace || s["name"] != "slipway-operator" {
				t.Errorf("%s %s binds %v, want the ServiceAccount %s/slipway-operator the host-run operator runs as", o.GetKind(), o.GetName(), subjects, SampleOperatorNamespace)
			}
		}
	}
}

// With the real node the sample release runs the operator: one Deployment of every controller,
// from the local image never pulled, told the API server's address at the node's gateway (no
// kube-proxy), and the admission webhooks served through a Service that selects its pod.
func TestSampleRelease_RealNodeValuesRunTheOperatorFromItsImage(t *testing.T) {
	dir, err := findChartDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := renderSampleRelease(dir, SampleInstalledVersion, realNodeValues("https://10.251.3.1:38001"))
	if err != nil {
		t.Fatal(err)
	}
	var deployments, hooks []*unstructured.Unstructured
	var webhookService *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment":
			deployments = append(deployments, o)
		case strings.HasSuffix(o.GetKind(), "WebhookConfiguration"):
			hooks = append(hooks, o)
		case o.GetKind() == "Service" && o.GetName() == "slipway-webhook-service":
			webhookService = o
		}
	}
	if len(deployments) != 1 || len(hooks) != 2 || webhookService == nil {
		t.Fatalf("%d Deployments, %d webhook configurations, webhook Service %v: want 1, 2 and the Service", len(deployments), len(hooks), webhookService != nil)
	}
	d := deployments[0]
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c, _ := containers[0].(map[string]any)
	if c["image"] != "slipway.local/slipway-operator:dev" || c["imagePullPolicy"] != "Never" {
		t.Errorf("image %v, pull policy %v", c["image"], c["imagePullPolicy"])
	}
	env := fmt.Sprint(c["env"])
	for _, want := range []string{"KUBERNETES_SERVICE_HOST value:10.251.3.1", "KUBERNETES_SERVICE_PORT value:38001"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %s lacks %s", env, want)
		}
	}
	if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--controllers=werfbundle,webapp,catalyst") {
		t.Errorf("args %s, want every controller", args)
	}
	podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	selector, _, _ := unstructured.NestedStringMap(webhookService.Object, "spec", "selector")
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("the webhook Service selects %s=%s, the operator's pod has %q", k, v, podLabels[k])
		}
	}
}
