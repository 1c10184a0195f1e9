package devenv

import (
	"fmt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"slices"
	"testing"
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
