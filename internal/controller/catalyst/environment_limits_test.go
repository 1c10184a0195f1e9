//go:build e2e

package catalyst_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// podinfoChart is the public podinfo chart (testdata/podinfo, see its NOTICE.slipway) at dir of a
// repository.
func podinfoChart(t testing.TB, dir string) gittest.Files {
	t.Helper()
	return testdataFiles(t, filepath.Join("testdata", "podinfo"), dir, gittest.Files{})
}

// testdataFiles adds every file under root to files, at dir of a repository, and returns files.
func testdataFiles(t testing.TB, root, dir string, files gittest.Files) gittest.Files {
	t.Helper()
	files, err := gittest.AddTree(files, root, dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// helmValues sets the Project's Helm values.
func helmValues(t testing.TB, v map[string]any) projectOption {
	return func(p *catalystv1alpha1.Project) {
		p.Spec.Deployment.Values = &apiextensionsv1.JSON{Raw: []byte(toJSON(t, v))}
	}
}

// restrictedValues make podinfo's pods meet the restricted Pod Security level of environment
// namespaces; podinfo's defaults set no security context.
var restrictedValues = map[string]any{
	"podSecurityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
	"securityContext":    map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
}

func merged(maps ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func envOf(c corev1.Container, name string) (values []string) {
	for _, e := range c.Env {
		if e.Name == name {
			values = append(values, e.Value)
		}
	}
	return values
}

// TestEnvironment_PublicChartWithoutLimitsBecomesReady: podinfo, a public chart that sets requests
// but no limits, in a namespace whose quota caps limits: the namespace's LimitRange gives its
// containers the defaults derived from the quota, so the quota admits its two pods and the
// environment becomes Ready. The environment's variables reach the container although the chart
// calls its list extraEnvs; the chart's own variables stay unless the Environment names them; the
// status counts the container.
func TestEnvironment_PublicChartWithoutLimitsBecomesReady(t *testing.T) {
	f := newFixture(t)
	head := f.commit("podinfo", podinfoChart(t, "charts/podinfo"))
	f.pushImage(head)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/podinfo"), helmValues(t, merged(restrictedValues, map[string]any{
		"replicaCount":     2,
		"fullnameOverride": "app",
		"ui":               map[string]any{"message": "from the chart"},
		"extraEnvs":        []any{map[string]any{"name": "CHART_ONLY", "value": "kept"}},
	})))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-9", head, func(e *catalystv1alpha1.Environment) {
		e.Spec.Config.EnvVars = []catalystv1alpha1.EnvVar{{Name: "DEBUG", Value: "true"}, {Name: "PODINFO_UI_MESSAGE", Value: "from the environment"}}
	}))
	got := f.waitReady(e)
	ns := got.Status.Namespace

	var lr corev1.LimitRange
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: catalyst.LimitRangeName}, &lr); err != nil {
		t.Fatal(err)
	}
	item := lr.Spec.Limits[0]
	if cpu := item.Default[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("250m")) != 0 {
		t.Errorf("default cpu limit %s, want 250m (a quarter of the quota of 1)", cpu.String())
	}
	if mem := item.Default[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("512Mi")) != 0 {
		t.Errorf("default memory limit %s, want 512Mi (a quarter of the quota of 2Gi)", mem.String())
	}
	if c := condition(got.Status.Conditions, catalystv1alpha1.NamespaceReadyCondition); !strings.Contains(c.Message, "container defaults (request/limit) cpu 100m/250m, memory 204Mi/512Mi") {
		t.Errorf("NamespaceReady message %q does not give the container defaults", c.Message)
	}

	var dep appsv1.Deployment
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Status.AvailableReplicas != 2 {
		t.Errorf("%d available replicas, want 2", dep.Status.AvailableReplicas)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Resources.Limits != nil {
		t.Errorf("the chart was changed: its container has limits %v", c.Resources.Limits)
	}
	for name, want := range map[string][]string{
		"DEBUG": {"true"}, "PODINFO_UI_MESSAGE": {"from the environment"}, "CHART_ONLY": {"kept"}, "PODINFO_UI_COLOR": {"#34577c"},
	} {
		if got := envOf(c, name); !slices.Equal(got, want) {
			t.Errorf("env %s = %q, want %q (env %v)", name, got, want, c.Env)
		}
	}
	if got.Status.EnvVarContainers != 1 {
		t.Errorf("status.envVarContainers = %d, want 1", got.Status.EnvVarContainers)
	}

	var pods corev1.PodList
	if err := f.c.List(f.ctx, &pods, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods, want 2", len(pods.Items))
	}
	for _, pod := range pods.Items {
		lim := pod.Spec.Containers[0].Resources.Limits
		if cpu := lim[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("250m")) != 0 {
			t.Errorf("pod %s: cpu limit %s, want the LimitRange's 250m", pod.Name, cpu.String())
		}
		if !slices.Equal(envOf(pod.Spec.Containers[0], "DEBUG"), []string{"true"}) {
			t.Errorf("pod %s lacks DEBUG=true: %v", pod.Name, pod.Spec.Containers[0].Env)
		}
	}
}

// TestEnvironment_SaysWhyPodsAreNotComing: podinfo at its default values sets no security
// context, so the restricted level of the environment namespace refuses its pods: the
// DeploymentReady message says so (the ReplicaSet's FailedCreate), not only "Replicas: 0/1".
func TestEnvironment_SaysWhyPodsAreNotComing(t *testing.T) {
	f := newFixture(t)
	head := f.commit("podinfo", podinfoChart(t, "charts/podinfo"))
	f.pushImage(head)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/podinfo"))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-10", head))
	got := f.waitEnv(e, "a DeploymentReady message naming Pod Security", func(got *catalystv1alpha1.Environment) bool {
		c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
		return c != nil && strings.Contains(c.Message, "violates PodSecurity")
	})
	c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
	if c.Status != metav1.ConditionFalse || c.Reason != catalystv1alpha1.DeployingReason || got.Status.Phase != catalystv1alpha1.PhaseDeploying ||
		!strings.Contains(c.Message, "Waiting for Deployment/app-podinfo: ") || !strings.Contains(c.Message, "pods cannot be created (FailedCreate)") ||
		!strings.Contains(c.Message, `"restricted:latest"`) {
		t.Errorf("phase %s, DeploymentReady %+v", got.Status.Phase, c)
	}
}

// TestEnvironment_FailedAfterTheProgressDeadline: a Deployment whose pods are refused stays
// Deploying until its progress deadline; then the environment is Failed, and the message still
// says why the pods did not come.
func TestEnvironment_FailedAfterTheProgressDeadline(t *testing.T) {
	f := newFixture(t)
	head := f.commit("a Deployment the namespace refuses", gittest.Files{"deploy/stuck/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 1
  progressDeadlineSeconds: 10
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      containers:
      - name: app
        image: app
        resources: {limits: {cpu: 100m, memory: 64Mi}}
`)})
	f.pushImage(head)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeManifest, "deploy/stuck"))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-11", head))
	got := f.waitFailed(e)
	c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
	if c.Reason != catalystv1alpha1.DeploymentFailedReason || !strings.Contains(c.Message, "Deployment/stuck failed: Progress deadline exceeded") ||
		!strings.Contains(c.Message, "violates PodSecurity") {
		t.Errorf("DeploymentReady %+v", c)
	}
	if r := condition(got.Status.Conditions, "Ready"); r.Reason != catalystv1alpha1.DeploymentFailedReason {
		t.Errorf("Ready %+v", r)
	}
}

// TestEnvironment_SaysWhyStatefulSetPodsAreNotComing: a StatefulSet creates its pods itself and
// says why it could not only in FailedCreate events; the DeploymentReady message repeats them.
func TestEnvironment_SaysWhyStatefulSetPodsAreNotComing(t *testing.T) {
	f := newFixture(t)
	head := f.commit("a StatefulSet the namespace refuses", gittest.Files{"deploy/db/statefulset.yaml": []byte(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres:17
        resources: {limits: {cpu: 100m, memory: 64Mi}}
`)})
	f.pushImage(head)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeManifest, "deploy/db"))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-12", head))
	got := f.waitEnv(e, "a DeploymentReady message naming Pod Security", func(got *catalystv1alpha1.Environment) bool {
		c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
		return c != nil && strings.Contains(c.Message, "violates PodSecurity")
	})
	c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
	if !strings.Contains(c.Message, "Waiting for StatefulSet/db: ") || !strings.Contains(c.Message, "pods cannot be created (FailedCreate): ") {
		t.Errorf("DeploymentReady %+v", c)
	}
}

// TestEnvironment_SaysTheQuotaRefusesPods: a pod asking for more than the namespace's quota is
// refused by the quota; the DeploymentReady message quotes the refusal.
func TestEnvironment_SaysTheQuotaRefusesPods(t *testing.T) {
	f := newFixture(t)
	head := f.commit("a Deployment above the quota", gittest.Files{"deploy/big/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 1
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: app
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
        resources: {requests: {cpu: "2", memory: 64Mi}, limits: {cpu: "2", memory: 64Mi}}
`)})
	f.pushImage(head)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeManifest, "deploy/big"))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-13", head))
	got := f.waitEnv(e, "a DeploymentReady message naming the quota", func(got *catalystv1alpha1.Environment) bool {
		c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
		return c != nil && strings.Contains(c.Message, "exceeded quota: "+catalyst.QuotaName)
	})
	c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
	if !strings.Contains(c.Message, "Waiting for Deployment/big: ") || !strings.Contains(c.Message, "pods cannot be created (FailedCreate): ") {
		t.Errorf("DeploymentReady %+v", c)
	}
}
