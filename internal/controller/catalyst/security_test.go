//go:build e2e

package catalyst_test

import (
	"encoding/base64"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// attackChart is the attacker's chart testdata/attacks/<name>, at charts/app of a repository
// (replacing the sample chart there).
func attackChart(t testing.TB, name string) gittest.Files {
	t.Helper()
	files := gittest.Files{"charts/app/templates/deployment.yaml": gittest.Delete, "charts/app/templates/service.yaml": gittest.Delete,
		"charts/app/values.yaml": gittest.Delete}
	// The templates of the other attacks, which an earlier commit of the repository may hold.
	others, err := filepath.Glob(filepath.Join("testdata", "attacks", "*", "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range others {
		files[path.Join("charts/app/templates", filepath.Base(o))] = gittest.Delete
	}
	return testdataFiles(t, filepath.Join("testdata", "attacks", name), "charts/app", files)
}

// absent asserts that obj (namespaced or not) does not exist.
func (f *fixture) absent(obj client.Object, what string) {
	f.t.Helper()
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
		f.t.Errorf("%s exists (or reading it failed: %v)", what, err)
	}
}

// TestSecurity_AttackerChartsAreRefusedOrConfined deploys one attacker's chart per environment
// (testdata/attacks): each is refused before anything is applied, named in DeploymentReady and a
// Warning Event, stopped at the render output limit, or confined to what the environment's own
// ServiceAccount may do; nothing lands outside the environment's namespace (the webhook
// configuration, the ClusterRoleBinding, the Namespace, the CRD, the ConfigMap for kube-system) and
// no Secret of another namespace reaches it.
func TestSecurity_AttackerChartsAreRefusedOrConfined(t *testing.T) {
	f := newFixture(t)
	const jewel = "the-crown-jewels-of-another-team"
	f.createNamespace("slipway-attack-target")
	if err := f.c.Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "crown-jewels", Namespace: "slipway-attack-target"},
		StringData: map[string]string{"token": jewel}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"))
	p.Spec.Registry = nil // nothing to build: the charts run no image of the commit
	f.create(p)
	f.start()
	f.waitProjectReady(p)

	type attack struct {
		chart, reason string
		// named are what the message must name.
		named   []string
		outside client.Object
	}
	attacks := []attack{
		// The renderer's lookups go through the operator, which reads the environment's
		// namespace only.
		{chart: "lookup-secrets", reason: catalystv1alpha1.RenderFailedReason,
			named: []string{"lookup refused", "namespace kube-system is not the environment's"}},
		{chart: "lookup-tolerant", reason: catalystv1alpha1.RenderFailedReason,
			named: []string{"lookup refused", "namespace slipway-attack-target is not the environment's"}},
		{chart: "clusterrolebinding", reason: catalystv1alpha1.ObjectRefusedReason,
			named:   []string{"ClusterRoleBinding.rbac.authorization.k8s.io/preview-is-admin (app/templates/escalate.yaml) is cluster-scoped"},
			outside: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "preview-is-admin"}}},
		{chart: "webhook", reason: catalystv1alpha1.ObjectRefusedReason,
			named:   []string{"ValidatingWebhookConfiguration.admissionregistration.k8s.io/preview-sees-everything (app/templates/webhook.yaml) is cluster-scoped"},
			outside: &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "preview-sees-everything"}}},
		{chart: "namespace", reason: catalystv1alpha1.ObjectRefusedReason,
			named:   []string{"Namespace/preview-escape (app/templates/namespace.yaml) is cluster-scoped"},
			outside: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "preview-escape"}}},
		{chart: "crd", reason: catalystv1alpha1.ObjectRefusedReason,
			named:   []string{"CustomResourceDefinition.apiextensions.k8s.io/backdoors.attacker.example.dev (app/templates/crd.yaml) is cluster-scoped"},
			outside: &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "backdoors.attacker.example.dev"}}},
		{chart: "other-namespace", reason: catalystv1alpha1.ObjectRefusedReason,
			named:   []string{"ConfigMap/coredns-override (app/templates/configmap.yaml) is for namespace kube-system"},
			outside: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns-override", Namespace: "kube-system"}}},
		{chart: "rolebinding-admin", reason: catalystv1alpha1.ObjectRefusedReason,
			named: []string{"RoleBinding.rbac.authorization.k8s.io/preview-admin (app/templates/rolebinding.yaml) binds ClusterRole cluster-admin, which is not in the Project's allowedClusterRoles"}},
		// About 21 MB of ConfigMaps against the default render output limit (16 MiB).
		{chart: "flood", reason: catalystv1alpha1.RenderFailedReason,
			named: []string{"the chart's templates rendered", "more than 16777216 bytes (the render output limit)"}},
	}
	envs := make([]*catalystv1alpha1.Environment, len(attacks))
	for i, a := range attacks {
		sha := f.commit("attack: "+a.chart, attackChart(t, a.chart))
		envs[i] = f.createEnvironment(f.environment(fmt.Sprintf("atk-%d", i), sha))
	}
	for i, a := range attacks {
		got := f.waitFailed(envs[i])
		ns := got.Status.Namespace
		c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
		if c == nil || c.Reason != a.reason {
			t.Errorf("%s: DeploymentReady = %+v, want reason %s", a.chart, c, a.reason)
			continue
		}
		for _, want := range a.named {
			if !strings.Contains(c.Message, want) {
				t.Errorf("%s: message %q does not name %q", a.chart, c.Message, want)
			}
		}
		if a.reason == catalystv1alpha1.ObjectRefusedReason && !strings.Contains(c.Message, "nothing was applied to namespace "+ns) {
			t.Errorf("%s: message %q does not say that nothing was applied", a.chart, c.Message)
		}
		if a.outside != nil {
			f.absent(a.outside, a.chart+": "+a.outside.GetName())
		}
		f.checkNothingDeployed(a.chart, ns, jewel)
		f.checkWarningEvent(got, a.reason, a.named)
	}
}

// checkNothingDeployed asserts that the namespace holds no object of the deployment (no Helm
// release, no ConfigMap of the chart) and nothing that carries the Secret value jewel.
func (f *fixture) checkNothingDeployed(what, ns, jewel string) {
	f.t.Helper()
	var cms corev1.ConfigMapList
	if err := f.c.List(f.ctx, &cms, client.InNamespace(ns)); err != nil {
		f.t.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(jewel))
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			f.t.Errorf("%s: ConfigMap %s/%s was applied", what, ns, cm.Name)
		}
		for _, v := range cm.Data {
			if strings.Contains(v, jewel) || strings.Contains(v, encoded) {
				f.t.Errorf("%s: ConfigMap %s/%s holds another namespace's Secret", what, ns, cm.Name)
			}
		}
	}
	var secrets corev1.SecretList
	if err := f.c.List(f.ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}); err != nil {
		f.t.Fatal(err)
	}
	if len(secrets.Items) > 0 {
		f.t.Errorf("%s: a Helm release was stored (%s): the render was not refused before the first write", what, secrets.Items[0].Name)
	}
}

// checkWarningEvent asserts a Warning Event of the Environment about its failed deploy (the reason,
// or the phase change to Failed) whose message holds every one of named.
func (f *fixture) checkWarningEvent(env *catalystv1alpha1.Environment, reason string, named []string) {
	f.t.Helper()
	testenv.Eventually(f.ctx, f.t, "a "+reason+" Event of "+env.Name, func() (bool, error) {
		var evs corev1.EventList
		if err := f.c.List(f.ctx, &evs, client.InNamespace(env.Namespace)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			// The deploy's note, or the phase change it caused, which carries its message.
			ofDeploy := e.Reason == reason || e.Reason == "Phase"+string(catalystv1alpha1.PhaseFailed)
			if e.InvolvedObject.Name == env.Name && ofDeploy && e.Type == corev1.EventTypeWarning &&
				!slices.ContainsFunc(named, func(n string) bool { return !strings.Contains(e.Message, n) }) {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestSecurity_HelmHooksAreDoneAsTheEnvironment: a chart's pre-install hook Job is created by the
// environment's own ServiceAccount. With the default ClusterRole the hook runs and the environment
// becomes Ready; with a Project whose ClusterRole does not allow Jobs the hook is refused by the
// API server for that ServiceAccount, although the operator's own identity may create Jobs.
func TestSecurity_HelmHooksAreDoneAsTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, clusterRole string
		ready             bool
	}{
		{name: "default ClusterRole", ready: true},
		{name: "ClusterRole without Jobs", clusterRole: "preview-no-jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.clusterRole != "" {
				f.allowBinding(tc.clusterRole, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}})
			}
			p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"))
			p.Spec.Registry = nil
			p.Spec.Deployment.ClusterRole = tc.clusterRole
			f.create(p)
			f.start()
			f.waitProjectReady(p)
			e := f.createEnvironment(f.environment("hook", f.commit("a hook", attackChart(t, "hook-job"))))
			if tc.ready {
				got := f.waitReady(e)
				f.checkDeployerBinding(got.Status.Namespace)
				return
			}
			got := f.waitFailed(e)
			c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
			if c == nil || !strings.Contains(c.Message, deployerUser(got.Status.Namespace)) || !strings.Contains(c.Message, `resource "jobs" in API group "batch"`) {
				t.Fatalf("DeploymentReady = %+v, want the hook Job refused for the environment's ServiceAccount", c)
			}
			f.absent(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: got.Status.Namespace}}, "the chart's ConfigMap after its pre-install hook failed")
		})
	}
}

// allowBinding creates the ClusterRole name with rules and lets the operator bind it, as a
// cluster's administrator does for a Project that names its own ClusterRole.
func (f *fixture) allowBinding(name string, rules ...rbacv1.PolicyRule) {
	f.t.Helper()
	binder := name + "-binder"
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: binder}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{name}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: binder},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: binder},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controlplane.OperatorUser}}},
	}
	for _, o := range objs {
		if err := f.c.Create(f.ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			f.t.Fatal(err)
		}
	}
	f.t.Cleanup(func() {
		for _, o := range objs {
			_ = env.Client.Delete(f.ctx, o)
		}
	})
}

// TestSecurity_EndlessTemplatesFailWithinTheirLimits: a template that loops without end fails the
// deploy at the render timeout while a WebApp reconciled by the same operator keeps converging;
// one that expands without end fails at the render memory limit.
func TestSecurity_EndlessTemplatesFailWithinTheirLimits(t *testing.T) {
	t.Run("loop", func(t *testing.T) {
		f := newFixture(t)
		f.webApps = true
		f.render = deploy.RenderLimits{Timeout: 20 * time.Second}
		loop := f.endlessEnvironment("endless-loop")
		// While the loop renders, a WebApp converges.
		wa := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: f.team},
			Spec: webappv1.WebAppSpec{Image: "registry.example.dev/org/web:1", Replicas: ptr.To[int32](1)}}
		f.create(wa)
		testenv.WaitFor(f.ctx, t, f.c, client.ObjectKeyFromObject(wa), "WebApp bystander Ready", func(w *webappv1.WebApp) bool {
			return w.Status.Phase == webappv1.PhaseReady
		}, func(w *webappv1.WebApp) string { return string(w.Status.Phase) })
		if got := f.getEnv(loop); got.Status.Phase == catalystv1alpha1.PhaseFailed {
			t.Errorf("the loop had already failed when the WebApp became Ready: the test shows nothing about converging meanwhile")
		}
		f.checkRenderFailed(loop, "took longer than 20s (the render timeout)")
	})
	t.Run("expansion", func(t *testing.T) {
		f := newFixture(t)
		f.render = deploy.RenderLimits{Timeout: 3 * time.Minute, MaxMemory: 256 << 20}
		f.checkRenderFailed(f.endlessEnvironment("endless-expansion"), "used more than 256 MiB of memory (the render memory limit)")
	})
}

// endlessEnvironment starts the controllers with a Helm Project and creates an Environment at a
// commit holding the attacker's chart.
func (f *fixture) endlessEnvironment(chart string) *catalystv1alpha1.Environment {
	f.t.Helper()
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"))
	p.Spec.Registry = nil
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	return f.createEnvironment(f.environment("endless", f.commit(chart, attackChart(f.t, chart))))
}

// checkRenderFailed waits until the Environment failed with RenderFailed saying want, and nothing
// of it was deployed.
func (f *fixture) checkRenderFailed(e *catalystv1alpha1.Environment, want string) {
	f.t.Helper()
	got := f.waitFailed(e)
	c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
	if c == nil || c.Reason != catalystv1alpha1.RenderFailedReason || !strings.Contains(c.Message, want) {
		f.t.Errorf("DeploymentReady = %+v, want RenderFailed saying %q", c, want)
	}
	f.checkNothingDeployed(e.Name, got.Status.Namespace, "never")
}

// attackManifests are four objects an environment may not hold, in one file.
const attackManifests = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: preview-is-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: preview-sees-everything}
webhooks: []
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns-override, namespace: kube-system}
data: {Corefile: ". { forward . 203.0.113.66 }"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: preview-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default}]
`

// TestSecurity_ManifestsAndKustomizeGetTheSameChecks: plain manifests and a kustomization holding
// the attacker's objects beside the sample application are refused as a whole, every refused
// object named in DeploymentReady and in a Warning Event, and nothing of them (the sample
// Deployment included) is applied.
func TestSecurity_ManifestsAndKustomizeGetTheSameChecks(t *testing.T) {
	for _, tc := range []struct {
		typ          catalystv1alpha1.DeploymentType
		path, origin string
		files        gittest.Files
	}{
		{catalystv1alpha1.DeploymentTypeManifest, "deploy/manifests", "deploy/manifests/zz-attack.yaml, document ",
			gittest.Files{"deploy/manifests/zz-attack.yaml": []byte(attackManifests)}},
		{catalystv1alpha1.DeploymentTypeKustomize, "deploy/attack", "kustomize build deploy/attack, document ",
			gittest.Files{"deploy/attack/attack.yaml": []byte(attackManifests), "deploy/attack/kustomization.yaml": []byte(
				"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../kustomize/base, attack.yaml]\n")}},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			f := newFixture(t)
			sha := f.commit("attack", tc.files)
			f.pushImage(sha)
			p := f.project(withDeployment(tc.typ, tc.path))
			f.create(p)
			f.start()
			f.waitProjectReady(p)
			got := f.waitFailed(f.createEnvironment(f.environment("atk", sha)))
			ns := got.Status.Namespace
			c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
			if c == nil || c.Reason != catalystv1alpha1.ObjectRefusedReason || !strings.Contains(c.Message, "4 objects refused, nothing was applied to namespace "+ns) {
				t.Fatalf("DeploymentReady = %+v", c)
			}
			named := []string{
				"ClusterRoleBinding.rbac.authorization.k8s.io/preview-is-admin (" + tc.origin, "is cluster-scoped",
				"ValidatingWebhookConfiguration.admissionregistration.k8s.io/preview-sees-everything (" + tc.origin,
				"ConfigMap/coredns-override (" + tc.origin, "is for namespace kube-system",
				"RoleBinding.rbac.authorization.k8s.io/preview-admin (" + tc.origin, "binds ClusterRole cluster-admin",
			}
			for _, want := range named {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message %q lacks %q", c.Message, want)
				}
			}
			f.checkWarningEvent(got, catalystv1alpha1.ObjectRefusedReason, named)
			f.absent(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "preview-is-admin"}}, "the ClusterRoleBinding")
			f.absent(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "preview-sees-everything"}}, "the ValidatingWebhookConfiguration")
			f.absent(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns-override", Namespace: "kube-system"}}, "the ConfigMap in kube-system")
			f.absent(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "preview-admin", Namespace: ns}}, "the RoleBinding")
			f.absent(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}, "the sample Deployment of the refused deployment")
		})
	}
}

// TestSecurity_TheProjectsPolicyDecides: a Project whose allowedKinds leave Deployments out
// refuses the sample application's Deployment by name and applies nothing, not even the Service
// it allows; listing Deployments in allowedKinds while deniedKinds names their group still refuses
// them (deniedKinds win); allowing a ClusterRole lets a RoleBinding to it through, and the same
// commit then deploys every kind allowedKinds lists.
func TestSecurity_TheProjectsPolicyDecides(t *testing.T) {
	f := newFixture(t)
	reader := "preview-reader-" + f.team
	f.allowBinding(reader, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
	sha := f.commit("a reader", gittest.Files{"deploy/manifests/zz-reader.yaml": []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + reader + `}
subjects: [{kind: ServiceAccount, name: default}]
`)})
	f.pushImage(sha)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeManifest, "deploy/manifests"), func(p *catalystv1alpha1.Project) {
		p.Spec.Deployment.AllowedKinds = []catalystv1alpha1.GroupKind{{Kind: "Service"}, {Group: rbacv1.GroupName, Kind: "RoleBinding"}}
	})
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pol", sha))
	const deployment = "Deployment.apps/app (deploy/manifests/deployment.yaml, document 1) "
	roleBinding := "RoleBinding.rbac.authorization.k8s.io/reader (deploy/manifests/zz-reader.yaml, document 1) binds ClusterRole " + reader
	named := []string{"2 objects refused", deployment + "is of a kind not in the Project's allowedKinds", roleBinding}
	got := f.waitFailed(e)
	f.checkRefused(got, named, "Service/app")
	f.checkWarningEvent(got, catalystv1alpha1.ObjectRefusedReason, named)
	f.checkNothingApplied(got.Status.Namespace)

	f.updateProject(p, func(p *catalystv1alpha1.Project) {
		p.Spec.Deployment.AllowedKinds = append(p.Spec.Deployment.AllowedKinds, catalystv1alpha1.GroupKind{Group: "apps", Kind: "Deployment"})
		p.Spec.Deployment.DeniedKinds = []catalystv1alpha1.GroupKind{{Group: "apps", Kind: "*"}}
	})
	named = []string{"2 objects refused", deployment + "is of a kind the Project's deniedKinds refuse", roleBinding}
	got = f.waitEnv(e, "the Deployment refused by deniedKinds", func(got *catalystv1alpha1.Environment) bool {
		c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
		return c != nil && strings.Contains(c.Message, "deniedKinds")
	})
	f.checkRefused(got, named, "Service/app")
	f.checkWarningEvent(got, catalystv1alpha1.ObjectRefusedReason, named)
	f.checkNothingApplied(got.Status.Namespace)

	f.updateProject(p, func(p *catalystv1alpha1.Project) {
		p.Spec.Deployment.DeniedKinds = nil
		p.Spec.Deployment.AllowedClusterRoles = []string{reader}
	})
	ready := f.waitReady(e)
	for _, o := range []struct {
		name string
		obj  client.Object
	}{{"reader", &rbacv1.RoleBinding{}}, {"app", &appsv1.Deployment{}}, {"app", &corev1.Service{}}} {
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ready.Status.Namespace, Name: o.name}, o.obj); err != nil {
			t.Errorf("the allowed %T %s was not applied: %v", o.obj, o.name, err)
		}
	}
}

// checkRefused asserts that DeploymentReady is ObjectRefused, saying that nothing was applied,
// naming every one of named and none of allowed.
func (f *fixture) checkRefused(env *catalystv1alpha1.Environment, named []string, allowed ...string) {
	f.t.Helper()
	c := condition(env.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
	if c == nil || c.Reason != catalystv1alpha1.ObjectRefusedReason || !strings.Contains(c.Message, "nothing was applied to namespace "+env.Status.Namespace) {
		f.t.Errorf("DeploymentReady = %+v, want ObjectRefused saying nothing was applied", c)
		return
	}
	for _, want := range named {
		if !strings.Contains(c.Message, want) {
			f.t.Errorf("DeploymentReady's message %q does not say %q", c.Message, want)
		}
	}
	for _, a := range allowed {
		if strings.Contains(c.Message, a) {
			f.t.Errorf("DeploymentReady's message %q refuses %s, which the Project allows", c.Message, a)
		}
	}
}

// checkNothingApplied asserts that no object of the sample manifests and the reader RoleBinding
// is in the namespace.
func (f *fixture) checkNothingApplied(ns string) {
	f.t.Helper()
	f.absent(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}, "the Deployment")
	f.absent(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}, "the Service the Project allows, of a refused deployment")
	f.absent(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}}, "the RoleBinding")
}

// updateProject changes the Project's spec with change, retrying on conflicts.
func (f *fixture) updateProject(p *catalystv1alpha1.Project, change func(*catalystv1alpha1.Project)) {
	f.t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := &catalystv1alpha1.Project{}
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(p), live); err != nil {
			return err
		}
		change(live)
		return f.c.Update(f.ctx, live)
	}); err != nil {
		f.t.Fatal(err)
	}
}
