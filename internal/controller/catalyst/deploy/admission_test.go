package deploy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// The test's own admission policies, bound to namespaces labelled testPolicyLabel: a Service is of
// type ClusterIP, an Ingress has no *-snippet annotation.
const (
	testPolicyLabel    = "deploy-test.slipway.dev/admission"
	servicePolicy      = "deploy-test-service-clusterip"
	ingressPolicy      = "deploy-test-ingress-no-snippets"
	servicePolicyWords = "a Service of an environment is of type ClusterIP"
	racePolicy         = "deploy-test-configmap-raced"
)

// installTestPolicies installs the policies and labels the fixture's namespace for them, then
// waits until the API server enforces them there.
func (f *fixture) installTestPolicies() {
	f.t.Helper()
	policy := func(name, resource, group, expr, message string) {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
					}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: expr, Message: message}},
			}}
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{testPolicyLabel: "on"}}}}}
		for _, o := range []client.Object{p, b} {
			if err := f.c.Create(f.ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				f.t.Fatal(err)
			}
		}
	}
	policy(servicePolicy, "services", "", "object.spec.type == 'ClusterIP'", servicePolicyWords)
	// A rule that changes between the dry run and the write: it refuses a ConfigMap named raced
	// when it is written, not when it is dry-run.
	policy(racePolicy, "configmaps", "", "request.dryRun || object.metadata.name != 'raced'", "a ConfigMap named raced is refused when written")
	policy(ingressPolicy, "ingresses", "networking.k8s.io",
		"!has(object.metadata.annotations) || !object.metadata.annotations.exists(k, k.endsWith('-snippet'))",
		"an Ingress of an environment has no snippet annotation")
	var ns corev1.Namespace
	f.get(f.ns, &ns)
	ns.Name, ns.Namespace = f.ns, ""
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels[testPolicyLabel] = "on"
	if err := f.c.Patch(f.ctx, &ns, patch); err != nil {
		f.t.Fatal(err)
	}
	// Policies take effect once the API server has compiled them: probe with a dry run.
	probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: f.ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
	err := wait.PollUntilContextTimeout(f.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := f.c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), servicePolicy), nil
	})
	if err != nil {
		f.t.Fatalf("the test policies are not enforced: %v", err)
	}
	raced := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "raced", Namespace: f.ns}}
	err = wait.PollUntilContextTimeout(f.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := f.c.Create(ctx, raced.DeepCopy())
		if err == nil {
			return false, f.c.Delete(ctx, raced.DeepCopy())
		}
		return strings.Contains(err.Error(), racePolicy), nil
	})
	if err != nil {
		f.t.Fatalf("the race policy is not enforced: %v", err)
	}
}

// The attacker's objects, as a chart's templates, manifests and a kustomization would bring them.
const (
	nodePortService = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app.kubernetes.io/name: app}
  ports: [{port: 80, targetPort: 8080}]
`
	snippetIngress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  annotations: {nginx.ingress.kubernetes.io/server-snippet: "location /steal { proxy_pass http://169.254.169.254; }"}
spec:
  rules:
  - host: pr-1.preview.example.dev
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}
`
	hookService = `apiVersion: v1
kind: Service
metadata:
  name: hook-web
  annotations: {helm.sh/hook: post-install}
spec:
  type: LoadBalancer
  ports: [{port: 80}]
`
	hookJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: app}]
`
)

func attackerSources() gittest.Files {
	return gittest.Merge(gittest.HelmChart("charts/app", "app"), gittest.Manifests("deploy"), gittest.Files{
		"charts/app/templates/web-service.yaml":  []byte(nodePortService),
		"charts/app/templates/web-ingress.yaml":  []byte(snippetIngress),
		"charts/app/templates/hook-service.yaml": []byte(hookService),
		"charts/app/templates/hook-job.yaml":     []byte(hookJob),
		"deploy/web/service.yaml":                []byte(nodePortService),
		"deploy/web/ingress.yaml":                []byte(snippetIngress),
		"kustomize/web-service.yaml":             []byte(nodePortService),
		"kustomize/web-ingress.yaml":             []byte(snippetIngress),
		"kustomize/kustomization.yaml":           []byte("resources: [deployment.yaml, service.yaml, web-service.yaml, web-ingress.yaml]\n"),
	}, gittest.Manifests("kustomize"))
}

// TestAdmission_APIServerRefusalsComeBeforeAnyWrite deploys an attacker's chart, manifests and
// kustomization that the engine's own checks let through (a NodePort Service, an Ingress with a
// snippet annotation, a LoadBalancer Service as a Helm hook) into a namespace where the test's
// ValidatingAdmissionPolicies refuse them: each deploy fails with ErrRefusedObject naming every
// refused object, its file and the policy, and nothing is written (no object, no inventory, no
// Helm release, no hook). The sample application, which the policies admit, deploys there.
func TestAdmission_APIServerRefusalsComeBeforeAnyWrite(t *testing.T) {
	f := newFixture(t)
	f.installTestPolicies()
	src := f.commit(attackerSources())
	for _, tc := range []struct {
		typ   catalystv1alpha1.DeploymentType
		path  string
		named []string
	}{
		{helmType, "charts/app", []string{
			"Service/web (app/templates/web-service.yaml): refused by the API server: services \"web\" is forbidden: ValidatingAdmissionPolicy '" + servicePolicy + "'",
			"Ingress.networking.k8s.io/web (app/templates/web-ingress.yaml): refused by the API server: ingresses.networking.k8s.io \"web\" is forbidden: ValidatingAdmissionPolicy '" + ingressPolicy + "'",
			"Service/hook-web (app/templates/hook-service.yaml): refused by the API server",
			"3 objects refused", servicePolicyWords}},
		{manifestType, "deploy", []string{
			"Service/web (deploy/web/service.yaml, document 1): refused by the API server: services \"web\" is forbidden: ValidatingAdmissionPolicy '" + servicePolicy + "'",
			"Ingress.networking.k8s.io/web (deploy/web/ingress.yaml, document 1): refused by the API server",
			"2 objects refused"}},
		{kustomizeType, "kustomize", []string{
			"Service/web (kustomize build kustomize, document ", "services \"web\" is forbidden: ValidatingAdmissionPolicy '" + servicePolicy + "'",
			"Ingress.networking.k8s.io/web (kustomize build kustomize, document ", "2 objects refused"}},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			err := f.deployFails(f.request(tc.typ, src, tc.path), deploy.ErrRefusedObject)
			t.Log(err)
			if deploy.Reason(err) != catalystv1alpha1.ObjectRefusedReason || !deploy.Stalled(err) {
				t.Errorf("reason %s, stalled %v; want ObjectRefused, stalled", deploy.Reason(err), deploy.Stalled(err))
			}
			for _, want := range append(tc.named, "nothing was applied to namespace "+f.ns) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message does not name %q", want)
				}
			}
			f.nothingWritten()
		})
	}
	// What the policies admit deploys as before. (The hook Job is gone too: no Job controller
	// runs here to complete it.)
	src = f.commit(gittest.Files{"charts/app/templates/web-service.yaml": gittest.Delete,
		"charts/app/templates/web-ingress.yaml": gittest.Delete, "charts/app/templates/hook-service.yaml": gittest.Delete,
		"charts/app/templates/hook-job.yaml": gittest.Delete})
	if res := f.deploy(f.request(helmType, src, "charts/app")); res.Revision != "1" {
		t.Errorf("revision %s", res.Revision)
	}
}

// nothingWritten asserts that the namespace holds no object of release pr-1.
func (f *fixture) nothingWritten() {
	f.t.Helper()
	var secrets corev1.SecretList
	if n := f.count(&secrets, helmReleaseSecrets); n != 0 {
		f.t.Errorf("%d Helm release Secrets", n)
	}
	f.gone(deploy.InventoryName("pr-1"), &corev1.ConfigMap{})
	f.gone("app", &appsv1.Deployment{})
	f.gone("web", &corev1.Service{})
	f.gone("hook-web", &corev1.Service{})
	f.gone("web", &networkingv1.Ingress{})
	f.gone("migrate", &batchv1.Job{})
}

// TestAdmission_QuotaBeyondItsLimitIsRefusedAFullOneIsTransient: a deploy whose Service alone is
// more than the namespace's quota allows is refused (ObjectRefused, the quota named); one that
// would fit the quota but not what others use of it now fails as transient (retried), and neither
// writes anything. The quota controller does not run here: the test sets the quota's status.
func TestAdmission_QuotaBeyondItsLimitIsRefusedAFullOneIsTransient(t *testing.T) {
	for _, tc := range []struct {
		name          string
		hard, used    string
		wantRefused   bool
		wantInMessage string
	}{
		{"beyond", "0", "0", true, "exceeded quota: services, requested: services=1, used: services=0, limited: services=0"},
		{"full", "1", "1", false, "exceeded quota: services, requested: services=1, used: services=1, limited: services=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "services", Namespace: f.ns},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse(tc.hard)}}}
			if err := f.c.Create(f.ctx, q); err != nil {
				t.Fatal(err)
			}
			q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse(tc.used)}}
			if err := f.c.Status().Update(f.ctx, q); err != nil {
				t.Fatal(err)
			}
			_, err := f.engine.Deploy(f.ctx, f.request(manifestType, f.commit(gittest.Manifests("deploy")), "deploy"))
			t.Log(err)
			if err == nil || errors.Is(err, deploy.ErrRefusedObject) != tc.wantRefused || deploy.Stalled(err) != tc.wantRefused {
				t.Fatalf("got %v (stalled %v), want refused and stalled: %v", err, deploy.Stalled(err), tc.wantRefused)
			}
			if !strings.Contains(err.Error(), tc.wantInMessage) || !strings.Contains(err.Error(), "Service/app") {
				t.Errorf("message does not name Service/app and %q", tc.wantInMessage)
			}
			f.gone(deploy.InventoryName("pr-1"), &corev1.ConfigMap{})
			f.gone("app", &appsv1.Deployment{})
		})
	}
}

// TestAdmission_ARefusalAtTheWriteIsReportedLikeTheDryRuns: a rule that admits the dry run and
// refuses the write (as a policy or quota changed in between would) fails a manifest deploy and a
// Helm release alike with ErrRefusedObject naming the object, its file and the policy, not as a
// Helm failure with a raw error.
func TestAdmission_ARefusalAtTheWriteIsReportedLikeTheDryRuns(t *testing.T) {
	f := newFixture(t)
	f.installTestPolicies()
	raced := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: raced}\ndata: {a: b}\n")
	src := f.commit(gittest.Merge(gittest.HelmChart("charts/app", "app"), gittest.Manifests("deploy"),
		gittest.Files{"charts/app/templates/raced.yaml": raced, "deploy/raced.yaml": raced}))
	for _, tc := range []struct {
		typ        catalystv1alpha1.DeploymentType
		path, file string
	}{
		{manifestType, "deploy", "deploy/raced.yaml, document 1"},
		{helmType, "charts/app", "app/templates/raced.yaml"},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			err := f.deployFails(f.request(tc.typ, src, tc.path), deploy.ErrRefusedObject)
			t.Log(err)
			for _, want := range []string{"ConfigMap/raced (" + tc.file + "): refused by the API server",
				"ValidatingAdmissionPolicy '" + racePolicy + "'", "refused while the deploy applied it"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message does not say %q", want)
				}
			}
			if errors.Is(err, deploy.ErrHelmRelease) || deploy.Reason(err) != catalystv1alpha1.ObjectRefusedReason {
				t.Errorf("reason %s", deploy.Reason(err))
			}
			f.gone("raced", &corev1.ConfigMap{})
		})
	}
}

// TestAdmission_AHookIsJudgedAsHelmWritesIt: Helm deletes the previous revision's hook before it
// creates the new one (its default delete policy), so the dry run judges a hook as a new object:
// an upgrade whose hook changes a field that cannot change (an immutable ConfigMap's data, a Job's
// template) deploys, and the hook holds the new revision's data.
func TestAdmission_AHookIsJudgedAsHelmWritesIt(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(gittest.HelmChart("charts/app", "app"), gittest.Files{
		"charts/app/templates/hook.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: migration
  annotations: {helm.sh/hook: "pre-install,pre-upgrade"}
immutable: true
data: {tag: {{ .Values.image.tag | quote }}}
`)}))
	req := f.request(helmType, src, "charts/app")
	f.deploy(req)
	req.Image.Tag = "fedcba9876543210fedcba9876543210fedcba98"
	if res := f.deploy(req); res.Revision != "2" {
		t.Errorf("revision %s", res.Revision)
	}
	var cm corev1.ConfigMap
	f.get("migration", &cm)
	if cm.Data["tag"] != req.Image.Tag {
		t.Errorf("the hook holds %v, want the new tag", cm.Data)
	}
}
