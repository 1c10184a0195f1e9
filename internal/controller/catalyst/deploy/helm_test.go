package deploy_test

import (
	"slices"
	"strings"
	"testing"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

const helmType = catalystv1alpha1.DeploymentTypeHelm

// chartWithHost is the sample chart plus a ConfigMap that shows the injected ingress host.
func chartWithHost() gittest.Files {
	return gittest.Merge(gittest.HelmChart("charts/app", "app"), gittest.Files{
		"charts/app/templates/configmap.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}-config
data:
  host: {{ (.Values.ingress | default dict).host | default "" | quote }}
`),
	})
}

// helmReleaseSecrets are the labels of Helm's release Secrets of release pr-1.
var helmReleaseSecrets = map[string]string{"owner": "helm", "name": "pr-1"}

func TestHelm_InstallThenUpgradeIncrementsRevisionAndUpdatesObjects(t *testing.T) {
	f := newFixture(t)
	src := f.commit(chartWithHost())
	req := f.request(helmType, src, "./charts/app")
	req.Values = map[string]any{
		"service": map[string]any{"port": 8080},
		"env":     map[string]any{"FROM_PROJECT": "yes", "DEBUG": "overridden by the environment"},
	}

	res := f.deploy(req)
	if res.Revision != "1" || res.EnvContainers != 1 {
		t.Errorf("revision %q, %d containers given the variables; want 1 and 1", res.Revision, res.EnvContainers)
	}
	if got, want := refNames(res.Objects), []string{"ConfigMap/app-config", "Deployment.apps/app", "Service/app"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	var d appsv1.Deployment
	f.get("app", &d)
	f.checkInjected(&d, testImage.String())
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "FROM_PROJECT", Value: "yes"}) {
		t.Errorf("env %v lacks the project's FROM_PROJECT", d.Spec.Template.Spec.Containers[0].Env)
	}
	var svc corev1.Service
	f.get("app", &svc)
	if svc.Spec.Ports[0].Port != 8080 || svc.Labels["catalyst.dev/project"] != "app" {
		t.Errorf("Service port %d labels %v, want 8080 and catalyst.dev/project=app", svc.Spec.Ports[0].Port, svc.Labels)
	}
	var cm corev1.ConfigMap
	f.get("app-config", &cm)
	if cm.Data["host"] != "pr-1.preview.example.dev" {
		t.Errorf("host %q, want pr-1.preview.example.dev", cm.Data["host"])
	}
	var secrets corev1.SecretList
	if n := f.count(&secrets, helmReleaseSecrets); n != 1 || secrets.Items[0].Labels["catalyst.dev/environment"] != "pr-1" {
		t.Errorf("%d release Secrets (labels %v), want 1 labelled catalyst.dev/environment=pr-1", n, secrets.Items)
	}

	// A new commit with a new image, other values and variables.
	src = f.commit(gittest.Files{"README.md": []byte("second commit\n")})
	req.Source = src
	req.Image.Tag = "fedcba9876543210fedcba9876543210fedcba98"
	req.Env = []corev1.EnvVar{{Name: "DEBUG", Value: "false"}}
	req.Values = map[string]any{"service": map[string]any{"port": 9090}}
	res = f.deploy(req)
	if res.Revision != "2" {
		t.Errorf("revision %q after the upgrade, want 2", res.Revision)
	}
	f.get("app", &d)
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example.dev/org/app:fedcba9876543210fedcba9876543210fedcba98" {
		t.Errorf("image %q after the upgrade", c.Image)
	}
	if !slices.Equal(c.Env, []corev1.EnvVar{{Name: "DEBUG", Value: "false"}}) {
		t.Errorf("env %v after the upgrade, want only DEBUG=false (values are not reused)", c.Env)
	}
	f.get("app", &svc)
	if svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("Service port %d after the upgrade, want 9090", svc.Spec.Ports[0].Port)
	}
	if n := f.count(&secrets, helmReleaseSecrets); n != 2 {
		t.Errorf("%d release Secrets after the upgrade, want 2", n)
	}
}

func TestHelm_HistoryIsBounded(t *testing.T) {
	f := newFixture(t, func(o *deploy.Options) { o.Helm.MaxHistory = 2 })
	req := f.request(helmType, f.commit(chartWithHost()), "charts/app")
	for range 4 {
		f.deploy(req)
	}
	var secrets corev1.SecretList
	if n := f.count(&secrets, helmReleaseSecrets); n != 2 {
		t.Errorf("%d release Secrets after 4 deploys, want 2", n)
	}
}

func TestHelm_UpgradeRecoversAnInterruptedRelease(t *testing.T) {
	f := newFixture(t)
	req := f.request(helmType, f.commit(chartWithHost()), "charts/app")
	f.deploy(req)

	// The operator died during an upgrade: the last revision stays pending-upgrade.
	cs := kubernetes.NewForConfigOrDie(env.Config)
	store := driver.NewSecrets(cs.CoreV1().Secrets(f.ns))
	r, err := store.Get("sh.helm.release.v1.pr-1.v1")
	if err != nil {
		t.Fatal(err)
	}
	rel := r.(*release.Release)
	rel.SetStatus(rcommon.StatusPendingUpgrade, "upgrade in progress")
	if err := store.Update("sh.helm.release.v1.pr-1.v1", rel); err != nil {
		t.Fatal(err)
	}

	if res := f.deploy(req); res.Revision != "2" {
		t.Errorf("revision %q, want 2", res.Revision)
	}
}

func TestHelm_RefusesAClusterScopedObjectAndAppliesNothing(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(chartWithHost(), gittest.Files{
		"charts/app/templates/clusterrole.yaml": []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: escape}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
`),
	}))
	err := f.deployFails(f.request(helmType, src, "charts/app"), deploy.ErrRefusedObject)
	if !strings.Contains(err.Error(), "ClusterRole.rbac.authorization.k8s.io/escape") || !strings.Contains(err.Error(), "cluster-scoped") {
		t.Errorf("message %q does not name the ClusterRole and say why", err)
	}
	f.gone("app", &appsv1.Deployment{})
	if err := f.c.Get(f.ctx, client.ObjectKey{Name: "escape"}, &rbacv1.ClusterRole{}); err == nil {
		t.Error("the ClusterRole was created")
	}
	var secrets corev1.SecretList
	if n := f.count(&secrets, helmReleaseSecrets); n != 0 {
		t.Errorf("%d release Secrets, want none", n)
	}
}

func TestHelm_ChartErrors(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(chartWithHost(), gittest.Files{
		"charts/broken/Chart.yaml":          []byte("apiVersion: v2\nname: broken\nversion: 0.1.0\n"),
		"charts/broken/templates/fail.yaml": []byte(`{{ fail "the database URL is missing" }}`),
		"charts/deps/Chart.yaml":            []byte("apiVersion: v2\nname: deps\nversion: 0.1.0\ndependencies: [{name: redis, version: 1.0.0, repository: https://charts.example.dev}]\n"),
		"charts/crds/Chart.yaml":            []byte("apiVersion: v2\nname: crds\nversion: 0.1.0\n"),
		"charts/crds/crds/widget.yaml":      []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.dev}\n"),
		"charts/notachart/templates/x.yaml": []byte("kind: ConfigMap\n"),
	}))
	for _, tc := range []struct {
		path       string
		want       error
		wantInMsg  string
		wantReason string
	}{
		{"charts/missing", deploy.ErrPathNotFound, `"charts/missing" does not exist`, catalystv1alpha1.DeploymentPathNotFoundReason},
		{"charts/notachart", deploy.ErrPathNotFound, "no Chart.yaml", catalystv1alpha1.DeploymentPathNotFoundReason},
		{"charts/broken", deploy.ErrInvalidChart, "the database URL is missing", catalystv1alpha1.RenderFailedReason},
		{"charts/deps", deploy.ErrInvalidChart, "missing in charts/ directory: redis", catalystv1alpha1.RenderFailedReason},
		{"charts/crds", deploy.ErrRefusedObject, "crds/widget.yaml), which are cluster-scoped", catalystv1alpha1.ObjectRefusedReason},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := f.deployFails(f.request(helmType, src, tc.path), tc.want)
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("message %q lacks %q", err, tc.wantInMsg)
			}
			if got := deploy.Reason(err); got != tc.wantReason || !deploy.Stalled(err) {
				t.Errorf("reason %s stalled %v, want %s and stalled", got, deploy.Stalled(err), tc.wantReason)
			}
		})
	}
}

func TestUninstall_HelmRemovesObjectsAndReleaseSecrets(t *testing.T) {
	f := newFixture(t)
	f.deploy(f.request(helmType, f.commit(chartWithHost()), "charts/app"))

	if err := f.engine.Uninstall(f.ctx, f.ns, deployerOf(f.ns), "pr-1"); err != nil {
		t.Fatal(err)
	}
	f.gone("app", &appsv1.Deployment{})
	f.gone("app", &corev1.Service{})
	f.gone("app-config", &corev1.ConfigMap{})
	var secrets corev1.SecretList
	if n := f.count(&secrets, map[string]string{"owner": "helm"}); n != 0 {
		t.Errorf("%d Helm release Secrets left", n)
	}
	if err := f.engine.Uninstall(f.ctx, f.ns, deployerOf(f.ns), "pr-1"); err != nil {
		t.Errorf("second Uninstall: %v", err)
	}
}

func TestHelm_AnObjectThatBelongsToSomethingElseIsAConflict(t *testing.T) {
	f := newFixture(t)
	svc := &corev1.Service{}
	svc.Name, svc.Namespace = "app", f.ns
	svc.Spec.Ports = []corev1.ServicePort{{Port: 80}}
	if err := f.c.Create(f.ctx, svc); err != nil {
		t.Fatal(err)
	}
	err := f.deployFails(f.request(helmType, f.commit(chartWithHost()), "charts/app"), deploy.ErrApplyConflict)
	if !strings.Contains(err.Error(), "Service") || deploy.Reason(err) != catalystv1alpha1.DeploymentFailedReason {
		t.Errorf("message %q, reason %s", err, deploy.Reason(err))
	}
}
