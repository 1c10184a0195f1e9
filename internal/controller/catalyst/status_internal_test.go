package catalyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// Phase, Ready, Reconciling and Stalled follow from the reconcile's facts.
func TestDecide(t *testing.T) {
	p := testProject(func(p *catalystv1alpha1.Project) { p.Spec.Preview.Domain = "preview.example.dev" })
	for _, tc := range []struct {
		name    string
		scope   envScope
		prev    catalystv1alpha1.Phase
		phase   catalystv1alpha1.Phase
		reason  string
		ready   metav1.ConditionStatus
		stalled bool
	}{
		{"new", envScope{}, "", catalystv1alpha1.PhasePending, catalystv1alpha1.ProgressingReason, metav1.ConditionFalse, false},
		{"project missing", envScope{failure: &failure{reason: catalystv1alpha1.ProjectNotFoundReason, phase: catalystv1alpha1.PhasePending, stalled: true}},
			"", catalystv1alpha1.PhasePending, catalystv1alpha1.ProjectNotFoundReason, metav1.ConditionFalse, true},
		{"building", envScope{nsReady: true, build: &outcome{reason: catalystv1alpha1.BuildingReason}}, catalystv1alpha1.PhasePending,
			catalystv1alpha1.PhaseBuilding, catalystv1alpha1.BuildingReason, metav1.ConditionFalse, false},
		{"build failed", envScope{nsReady: true, failure: &failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.BuildFailedReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true}}, catalystv1alpha1.PhaseBuilding,
			catalystv1alpha1.PhaseFailed, catalystv1alpha1.BuildFailedReason, metav1.ConditionFalse, true},
		{"registry down", envScope{nsReady: true, failure: &failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.RegistryUnavailableReason,
			phase: catalystv1alpha1.PhaseBuilding}}, catalystv1alpha1.PhaseReady,
			catalystv1alpha1.PhaseBuilding, catalystv1alpha1.RegistryUnavailableReason, metav1.ConditionFalse, false},
		{"deploying", envScope{nsReady: true, build: &outcome{ok: true}, deployed: true, ready: &outcome{reason: catalystv1alpha1.DeployingReason}},
			catalystv1alpha1.PhaseBuilding, catalystv1alpha1.PhaseDeploying, catalystv1alpha1.DeployingReason, metav1.ConditionFalse, false},
		{"ready", envScope{project: p, host: "pr-123.preview.example.dev", nsReady: true, build: &outcome{ok: true}, deployed: true, ready: &outcome{ok: true}},
			catalystv1alpha1.PhaseDeploying, catalystv1alpha1.PhaseReady, catalystv1alpha1.SucceededReason, metav1.ConditionTrue, false},
		{"deleting keeps the phase", envScope{deleting: true}, catalystv1alpha1.PhaseReady,
			catalystv1alpha1.PhaseReady, catalystv1alpha1.DeletingReason, metav1.ConditionFalse, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.scope
			got := decide(&s, tc.prev)
			if got.phase != tc.phase || got.ready.reason != tc.reason || got.ready.status != tc.ready || got.stalled != tc.stalled {
				t.Errorf("decide = %+v, want phase %s reason %s ready %s stalled %t", got, tc.phase, tc.reason, tc.ready, tc.stalled)
			}
			if got.ready.status != metav1.ConditionTrue && !got.stalled && !got.working {
				t.Error("not Ready, yet neither Reconciling nor Stalled: kstatus would read it as Current")
			}
		})
	}
}

// A Ready environment's status is computed the same way twice: a no-op reconcile changes nothing.
func TestComputeStatus_StableWhenNothingChanged(t *testing.T) {
	p := testProject(func(p *catalystv1alpha1.Project) { p.Spec.Preview.Domain = "preview.example.dev" })
	env := testEnv()
	newScope := func() *envScope {
		s := newEnvScope(env, time.Now())
		s.project, s.nsName, s.nsReady, s.nsMessage = p, "team-shop-pr-123", true, "ready"
		s.image, s.build = "r/x:"+testSHA, &outcome{ok: true, reason: catalystv1alpha1.ImageFoundReason, message: "found"}
		s.revision, s.deployed, s.host = "rev", true, "pr-123.preview.example.dev"
		s.ready, s.reconciled, s.ttlKnown = &outcome{ok: true, message: "2 objects"}, true, true
		return s
	}
	r := &EnvironmentReconciler{}
	s := newScope()
	r.computeStatus(s)
	first := env.Status.DeepCopy()
	if env.Status.Phase != catalystv1alpha1.PhaseReady || env.Status.URL != "http://pr-123.preview.example.dev" || env.Status.ObservedGeneration != 1 {
		t.Fatalf("status = %+v", env.Status)
	}
	for _, typ := range []string{catalystv1alpha1.NamespaceReadyCondition, catalystv1alpha1.BuildReadyCondition, catalystv1alpha1.DeploymentReadyCondition, conditions.Ready} {
		if !conditions.IsTrue(env.Status.Conditions, typ) {
			t.Errorf("%s is not True", typ)
		}
	}
	if conditions.Get(env.Status.Conditions, conditions.Reconciling) != nil || conditions.Get(env.Status.Conditions, conditions.Stalled) != nil {
		t.Error("Reconciling or Stalled present on a Ready environment")
	}
	s2 := newScope()
	r.computeStatus(s2)
	if !equalStatus(first, &env.Status) || len(s2.events) != 0 {
		t.Errorf("second computation changed the status or emitted %d events", len(s2.events))
	}
}

func equalStatus(a, b *catalystv1alpha1.EnvironmentStatus) bool {
	return a.Phase == b.Phase && a.URL == b.URL && len(a.Conditions) == len(b.Conditions) &&
		func() bool {
			for i := range a.Conditions {
				if a.Conditions[i] != b.Conditions[i] {
					return false
				}
			}
			return true
		}()
}

// The TTL runs from creation, or from the first reconcile of a new generation; deployment
// environments only expire with their own ttl.
func TestTTL(t *testing.T) {
	hour := &metav1.Duration{Duration: time.Hour}
	withDefault := testProject(func(p *catalystv1alpha1.Project) { p.Spec.DefaultTTL = &metav1.Duration{Duration: 72 * time.Hour} })
	for _, tc := range []struct {
		name string
		env  *catalystv1alpha1.Environment
		proj *catalystv1alpha1.Project
		want time.Duration
	}{
		{"no ttl", testEnv(), testProject(), 0},
		{"project default", testEnv(), withDefault, 72 * time.Hour},
		{"own ttl wins", testEnv(func(e *catalystv1alpha1.Environment) { e.Spec.TTL = hour }), withDefault, time.Hour},
		{"0s is never", testEnv(func(e *catalystv1alpha1.Environment) { e.Spec.TTL = &metav1.Duration{} }), withDefault, 0},
		{"deployment ignores the default", testEnv(func(e *catalystv1alpha1.Environment) { e.Spec.Type = catalystv1alpha1.EnvironmentTypeDeployment }), withDefault, 0},
		{"deployment with its own", testEnv(func(e *catalystv1alpha1.Environment) {
			e.Spec.Type, e.Spec.TTL = catalystv1alpha1.EnvironmentTypeDeployment, hour
		}), withDefault, time.Hour},
		{"project gone", testEnv(func(e *catalystv1alpha1.Environment) { e.Spec.TTL = hour }), nil, time.Hour},
	} {
		if got := effectiveTTL(tc.env, tc.proj); got != tc.want {
			t.Errorf("%s: ttl = %s, want %s", tc.name, got, tc.want)
		}
	}

	env := testEnv()
	now := env.CreationTimestamp.Add(10 * time.Minute)
	if base, _, change := ttlBase(env, now); !base.Equal(env.CreationTimestamp.Time) || change {
		t.Errorf("generation 1: base %s (change %t), want the creation time", base, change)
	}
	env.Generation = 2
	base, ann, change := ttlBase(env, now)
	if !base.Equal(now) || !change || ann != "2/"+now.Format(time.RFC3339) {
		t.Errorf("new generation: base %s, annotation %q, change %t", base, ann, change)
	}
	env.Annotations = map[string]string{AnnotationSpecSince: ann}
	if base2, _, change := ttlBase(env, now.Add(time.Hour)); !base2.Equal(now) || change {
		t.Errorf("recorded generation: base %s, change %t; want %s unchanged", base2, change, now)
	}
}

// The namespace is locked down: pod security, a quota from the environment or the project, and
// a network policy admitting only its own namespace and the ingress controller.
func TestDesiredObjects(t *testing.T) {
	p := testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Resources.DefaultQuota = &catalystv1alpha1.Quota{CPU: quantityPtr("1"), Memory: quantityPtr("2Gi")}
	})
	env := testEnv()
	l := namespaceLabels(env, "team", "shop", "feature/login", "restricted")
	if l["catalyst.dev/branch"] != "feature-login" || l[labelPodSecurityEnforce] != "restricted" || l[LabelEnvironmentName] != "pr-123" {
		t.Errorf("labels %v", l)
	}
	q := desiredQuota(env, p, "ns")
	if got := q.Spec.Hard[corev1.ResourceLimitsMemory]; got.String() != "2Gi" || len(q.Spec.Hard) != 4 {
		t.Errorf("quota %v", q.Spec.Hard)
	}
	env.Spec.Resources.Quota = &catalystv1alpha1.Quota{CPU: quantityPtr("4")}
	if q := desiredQuota(env, p, "ns"); len(q.Spec.Hard) != 2 || q.Spec.Hard.Cpu().String() == "" {
		t.Errorf("override: %v", q.Spec.Hard)
	}
	if desiredQuota(testEnv(), testProject(), "ns") != nil {
		t.Error("a quota without any asked for")
	}
	np := desiredNetworkPolicy(env, "ns", "ingress-nginx", false)
	if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Ingress) != 2 || len(np.Spec.Egress) != 2 {
		t.Fatalf("policy %+v", np.Spec)
	}
	if sel := np.Spec.Ingress[1].From[0].NamespaceSelector; sel == nil || sel.MatchLabels[labelNamespaceName] != "ingress-nginx" {
		t.Errorf("ingress controller rule %+v", np.Spec.Ingress[1])
	}
	if len(desiredNetworkPolicy(env, "ns", "", true).Spec.Egress) != 3 {
		t.Error("public egress rule missing")
	}

	wild := testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Preview = catalystv1alpha1.PreviewSpec{Domain: "preview.example.dev", IngressClassName: "nginx",
			Service: catalystv1alpha1.ServiceTarget{Name: "web", Port: 8080},
			TLS:     &catalystv1alpha1.TLSSpec{WildcardSecretRef: &catalystv1alpha1.SecretReference{Name: "wildcard"}}}
	})
	ing := desiredIngress(env, wild, "ns", "pr-123.preview.example.dev")
	// The wildcard is the ingress controller's default certificate: a TLS entry without a Secret.
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "" || strings.Join(ing.Spec.TLS[0].Hosts, ",") != "pr-123.preview.example.dev" ||
		*ing.Spec.IngressClassName != "nginx" ||
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "web" || ing.Annotations[AnnotationClusterIssuer] != "" {
		t.Errorf("wildcard ingress %+v", ing)
	}
	if u := urlFor(wild, "pr-123.preview.example.dev"); u != "https://pr-123.preview.example.dev" {
		t.Errorf("url %s", u)
	}
	acme := testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Preview.TLS = &catalystv1alpha1.TLSSpec{ClusterIssuer: "letsencrypt"}
	})
	ing = desiredIngress(env, acme, "ns", "h.example.dev")
	if ing.Annotations[AnnotationClusterIssuer] != "letsencrypt" || ing.Spec.TLS[0].SecretName != ingressTLSSecret ||
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "shop" {
		t.Errorf("cert-manager ingress %+v", ing)
	}
	copies := secretCopies(testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.SecretRefs = []catalystv1alpha1.SecretReference{{Name: "app"}, {Name: "app"}}
		p.Spec.Registry.SecretRef = &catalystv1alpha1.SecretReference{Name: "push"}
		p.Spec.Registry.PullSecretRef = &catalystv1alpha1.SecretReference{Name: "pull"}
		p.Spec.Preview.TLS = &catalystv1alpha1.TLSSpec{WildcardSecretRef: &catalystv1alpha1.SecretReference{Name: "wildcard"}}
	}))
	var names, sources []string
	for _, c := range copies {
		names, sources = append(names, c.name), append(sources, c.source)
	}
	// Neither the push credentials nor the wildcard's key are copied.
	if strings.Join(names, ",") != "app,"+PullSecretName || strings.Join(sources, ",") != "app,pull" {
		t.Errorf("copies %v from %v", names, sources)
	}
	// Push credentials alone: no pull Secret at all (the images are public).
	pushOnly := secretCopies(testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Registry.SecretRef = &catalystv1alpha1.SecretReference{Name: "push"}
	}))
	if len(pushOnly) != 0 {
		t.Errorf("copies with push credentials only: %+v", pushOnly)
	}
}

// The revision changes with everything a deploy depends on, and only with that.
func TestDeployRevision(t *testing.T) {
	p, env := testProject(), testEnv()
	base := deployRevision(env, p, "ns", "img", "h")
	if base != deployRevision(testEnv(), testProject(), "ns", "img", "h") {
		t.Error("same input, different revision")
	}
	if !strings.HasPrefix(base, testSHA[:12]+"/") {
		t.Errorf("revision %q does not start with the commit", base)
	}
	changed := []string{
		deployRevision(env, testProject(func(p *catalystv1alpha1.Project) { p.Spec.Deployment.Path = "other" }), "ns", "img", "h"),
		deployRevision(testEnv(func(e *catalystv1alpha1.Environment) {
			e.Spec.Config.EnvVars = []catalystv1alpha1.EnvVar{{Name: "A", Value: "1"}}
		}), p, "ns", "img", "h"),
		deployRevision(env, p, "ns", "img2", "h"),
		deployRevision(env, p, "ns", "img", "h2"),
	}
	for i, c := range changed {
		if c == base {
			t.Errorf("change %d left the revision as it was", i)
		}
	}
}

func quantityPtr(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
