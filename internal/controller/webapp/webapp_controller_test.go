package webapp_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestWebApp_CreatesDeploymentAndServiceOwnedByWebApp: one WebApp makes a Deployment and a Service
// of its name, controlled by it, labelled, with the spec's image, port, env, resources, probes,
// pull secrets and service type, and the pod security defaults.
func TestWebApp_CreatesDeploymentAndServiceOwnedByWebApp(t *testing.T) {
	f := newFixture(t)
	a := f.app("shop", withEnv("MODE", "production", "EMPTY", ""), func(a *webappv1.WebApp) {
		a.Spec.HealthCheckPath = "/healthz"
		a.Spec.ServiceType = corev1.ServiceTypeNodePort
		a.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		a.Spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}
	})
	f.create(a)
	f.start(time.Hour)

	got := f.waitPhase(a, webappv1.PhaseReconciling)
	d := f.deployment(a, "the Deployment exists", func(*appsv1.Deployment) bool { return true })
	svc := f.service(a, "the Service exists", func(*corev1.Service) bool { return true })

	for _, o := range []client.Object{d, svc} {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.UID != got.UID || ref.Kind != "WebApp" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("%T: controller reference %+v, want the WebApp (uid %s) blocking deletion", o, ref, got.UID)
		}
	}
	wantLabels := map[string]string{
		"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": "shop", "app.kubernetes.io/managed-by": "slipway",
	}
	for what, l := range map[string]map[string]string{"Deployment": d.Labels, "Service": svc.Labels, "pod template": d.Spec.Template.Labels} {
		for k, v := range wantLabels {
			if l[k] != v {
				t.Errorf("%s label %s = %q, want %q", what, k, l[k], v)
			}
		}
	}
	sel := map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": "shop"}
	if !maps.Equal(d.Spec.Selector.MatchLabels, sel) || !maps.Equal(svc.Spec.Selector, sel) {
		t.Errorf("selectors: Deployment %v, Service %v; want %v", d.Spec.Selector.MatchLabels, svc.Spec.Selector, sel)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "nginx:1.25" || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "http" {
		t.Errorf("container: image %s ports %+v", c.Image, c.Ports)
	}
	if len(c.Env) != 2 || c.Env[0].Name != "MODE" || c.Env[0].Value != "production" || c.Env[1].Name != "EMPTY" {
		t.Errorf("env = %+v", c.Env)
	}
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Limits.Memory().String() != "128Mi" {
		t.Errorf("resources = %+v", c.Resources)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port != intstr.FromString("http") {
			t.Errorf("%s probe = %+v, want GET /healthz on port http", name, p)
		}
	}
	if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets = %+v", pod.ImagePullSecrets)
	}
	if sc := pod.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context = %+v, want seccomp RuntimeDefault", pod.SecurityContext)
	}
	if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("the container may escalate privileges")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("a ServiceAccount token is mounted")
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 ||
		svc.Spec.Ports[0].TargetPort != intstr.FromString("http") {
		t.Errorf("service spec = %+v", svc.Spec)
	}

	st := got.Status
	if st.Selector != "app.kubernetes.io/instance=shop,app.kubernetes.io/name=shop" || st.URL != "http://shop."+f.ns+".svc:8080" {
		t.Errorf("status selector %q url %q", st.Selector, st.URL)
	}
	if !conditions.IsTrue(st.Conditions, conditions.Reconciling) || !conditions.IsTrue(st.Conditions, webappv1.ConditionProgressing) {
		t.Errorf("Reconciling and Progressing should be True while the Deployment is new: %+v", st.Conditions)
	}
	if c := condition(got, conditions.Ready); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", c)
	}
	if c := condition(got, webappv1.ConditionAvailable); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("Available = %+v, want Unknown before the Deployment reports", c)
	}
	if s := kstatus(t, got); s != status.InProgressStatus {
		t.Errorf("kstatus = %s, want InProgress", s)
	}
	f.waitEvent(got, "PhaseReconciling")
}

// TestWebApp_StatusFollowsDeploymentProgress: Reconciling until the Deployment controller observes
// the Deployment, WaitingForPods until every replica is updated and available, then Ready (kstatus
// Current); a replica change is Scaling until the counts converge; an image change rolls out.
func TestWebApp_StatusFollowsDeploymentProgress(t *testing.T) {
	f := newFixture(t)
	a := f.app("web")
	f.create(a)
	f.start(time.Hour)
	f.waitPhase(a, webappv1.PhaseReconciling)

	f.rollout(a, 2, 2, 1)
	got := f.waitPhase(a, webappv1.PhaseWaitingForPods)
	if c := condition(got, conditions.Ready); c.Reason != webapp.ReasonRollingOut || !strings.Contains(c.Message, "2/2 replicas updated, 1 available") {
		t.Errorf("Ready = %+v", c)
	}

	f.rollout(a, 2, 2, 2, available()...)
	got = f.waitPhase(a, webappv1.PhaseReady)
	if st := got.Status; st.Replicas != 2 || st.UpdatedReplicas != 2 || st.AvailableReplicas != 2 {
		t.Errorf("counts = %d/%d/%d, want 2/2/2", st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
	}
	if s := kstatus(t, got); s != status.CurrentStatus {
		t.Errorf("kstatus = %s, want Current", s)
	}
	if c := condition(got, webappv1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "MinimumReplicasAvailable" {
		t.Errorf("Available = %+v, want the Deployment's", c)
	}
	if condition(got, conditions.Reconciling) != nil || condition(got, conditions.Stalled) != nil {
		t.Errorf("Reconciling or Stalled present when Ready: %+v", got.Status.Conditions)
	}
	if c := condition(got, webappv1.ConditionProgressing); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Progressing = %+v, want False", c)
	}

	// Scale 2 -> 3: Scaling (before and after the Deployment controller observes it), then Ready.
	f.update(a, func(a *webappv1.WebApp) { a.Spec.Replicas = ptr.To[int32](3) })
	f.waitPhase(a, webappv1.PhaseScaling)
	f.deployment(a, "the Deployment has 3 replicas", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 3 })
	f.rollout(a, 3, 3, 2, available()...)
	got = f.waitFor(a, "Scaling reports 2 of 3 available", func(got *webappv1.WebApp) bool {
		return got.Status.Phase == webappv1.PhaseScaling && got.Status.AvailableReplicas == 2 && got.Status.Replicas == 3
	})
	if c := condition(got, conditions.Ready); c.Reason != webapp.ReasonScaling {
		t.Errorf("Ready = %+v, want reason Scaling", c)
	}
	f.rollout(a, 3, 3, 3, available()...)
	f.waitPhase(a, webappv1.PhaseReady)

	// New image and env: the Deployment's template changes; a rollout, not Scaling.
	f.update(a, func(a *webappv1.WebApp) {
		a.Spec.Image = "nginx:1.27"
		a.Spec.Env = []corev1.EnvVar{{Name: "COLOR", Value: "blue"}}
	})
	d := f.deployment(a, "the Deployment runs nginx:1.27", func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Spec.Containers[0].Image == "nginx:1.27"
	})
	if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "COLOR" {
		t.Errorf("env = %+v, want COLOR only", env)
	}
	f.waitPhase(a, webappv1.PhaseReconciling)
	f.rollout(a, 4, 1, 3, available()...)
	f.waitPhase(a, webappv1.PhaseWaitingForPods)
	f.rollout(a, 3, 3, 3, available()...)
	f.waitPhase(a, webappv1.PhaseReady)

	// Removing the env from the spec removes it from the Deployment (the applied set shrinks).
	f.update(a, func(a *webappv1.WebApp) { a.Spec.Env = nil })
	f.deployment(a, "the env is gone", func(d *appsv1.Deployment) bool { return len(d.Spec.Template.Spec.Containers[0].Env) == 0 })
}

// TestWebApp_NoOpReconcileWritesNothing: once the WebApp is Ready, resyncs read the cache and send
// no request that writes: no apply, no status patch, nothing changes on the server.
func TestWebApp_NoOpReconcileWritesNothing(t *testing.T) {
	f := newFixture(t)
	a := f.app("quiet", withEnv("A", "1", "B", ""), func(a *webappv1.WebApp) {
		a.Spec.HealthCheckPath = "/"
		a.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5")}
	})
	f.create(a)
	f.start(300 * time.Millisecond)
	f.waitPhase(a, webappv1.PhaseReconciling)
	f.rollout(a, 2, 2, 2, available()...)
	before := f.waitPhase(a, webappv1.PhaseReady)
	d0 := f.deployment(a, "Deployment", func(*appsv1.Deployment) bool { return true })
	s0 := f.service(a, "Service", func(*corev1.Service) bool { return true })

	f.writes.Reset()
	base := reconciles(t)
	f.eventually("ten more reconciles ran", func() bool { return reconciles(t) >= base+10 })
	if n := f.writes.Writes(); n != 0 {
		t.Errorf("%d writes during no-op reconciles, want 0", n)
	}
	after := f.get(a)
	d1 := f.deployment(a, "Deployment", func(*appsv1.Deployment) bool { return true })
	s1 := f.service(a, "Service", func(*corev1.Service) bool { return true })
	if after.ResourceVersion != before.ResourceVersion || d1.ResourceVersion != d0.ResourceVersion || s1.ResourceVersion != s0.ResourceVersion {
		t.Errorf("objects changed: WebApp %s->%s, Deployment %s->%s, Service %s->%s", before.ResourceVersion, after.ResourceVersion,
			d0.ResourceVersion, d1.ResourceVersion, s0.ResourceVersion, s1.ResourceVersion)
	}
}

// TestWebApp_RepairsManualDeploymentEdit: a hand edit of a field the operator sets is undone at
// once (the resync is an hour away); a field the operator does not set is left alone.
func TestWebApp_RepairsManualDeploymentEdit(t *testing.T) {
	f := newFixture(t)
	a := f.app("edited", func(a *webappv1.WebApp) { a.Spec.HealthCheckPath = "/ready" })
	f.create(a)
	f.start(time.Hour)
	d := f.deployment(a, "the Deployment exists", func(*appsv1.Deployment) bool { return true })

	d.Spec.Replicas = ptr.To[int32](7)
	d.Spec.Template.Spec.Containers[0].Image = "evil:1"
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
	d.Labels["team"] = "payments"
	if err := f.c.Update(f.ctx, d); err != nil {
		t.Fatal(err)
	}
	d = f.deployment(a, "the edit is repaired", func(d *appsv1.Deployment) bool {
		c := d.Spec.Template.Spec.Containers[0]
		return *d.Spec.Replicas == 2 && c.Image == "nginx:1.25" && c.ReadinessProbe != nil
	})
	if d.Labels["team"] != "payments" {
		t.Errorf("a label the operator does not set was removed: %v", d.Labels)
	}
}

// TestWebApp_RepairsDeletedService: a deleted Service is recreated at once.
func TestWebApp_RepairsDeletedService(t *testing.T) {
	f := newFixture(t)
	a := f.app("svc")
	f.create(a)
	f.start(time.Hour)
	old := f.service(a, "the Service exists", func(*corev1.Service) bool { return true })
	if err := f.c.Delete(f.ctx, old); err != nil {
		t.Fatal(err)
	}
	got := f.service(a, "the Service is recreated", func(s *corev1.Service) bool { return s.UID != old.UID })
	if metav1.GetControllerOf(got) == nil {
		t.Error("the recreated Service has no controller reference")
	}
}

// TestWebApp_ProgressDeadlineExceededIsFailedAndStalled: a rollout that stops progressing makes
// the WebApp Failed and Stalled (kstatus Failed) with what to check, and a Warning event; once the
// Deployment progresses again the WebApp is Ready and no longer Stalled.
func TestWebApp_ProgressDeadlineExceededIsFailedAndStalled(t *testing.T) {
	f := newFixture(t)
	a := f.app("stuck")
	f.create(a)
	f.start(time.Hour)
	f.waitPhase(a, webappv1.PhaseReconciling)
	f.rollout(a, 2, 2, 0,
		deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
		deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "stuck-1" has timed out progressing.`))

	got := f.waitPhase(a, webappv1.PhaseFailed)
	stalled := condition(got, conditions.Stalled)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != webapp.ReasonProgressDeadlineExceeded {
		t.Fatalf("Stalled = %+v", stalled)
	}
	for _, want := range []string{"timed out progressing", "0/2 replicas available", "spec.imagePullSecrets", "kubectl describe pods -l"} {
		if !strings.Contains(stalled.Message, want) {
			t.Errorf("message %q lacks %q", stalled.Message, want)
		}
	}
	if s := kstatus(t, got); s != status.FailedStatus {
		t.Errorf("kstatus = %s, want Failed", s)
	}
	if c := condition(got, webappv1.ConditionAvailable); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Available = %+v, want False", c)
	}
	f.waitEvent(got, "PhaseFailed")

	f.rollout(a, 2, 2, 2, available()...)
	got = f.waitPhase(a, webappv1.PhaseReady)
	if condition(got, conditions.Stalled) != nil {
		t.Errorf("still Stalled: %+v", got.Status.Conditions)
	}
}

// TestWebApp_RefusedWriteIsFailedAndStalled: objects the API server refuses make the WebApp
// Failed and Stalled with the server's message and what to fix; fixing the spec recovers it.
func TestWebApp_RefusedWriteIsFailedAndStalled(t *testing.T) {
	f := newFixture(t)
	// A WebApp name too long for a label value (and a Service name).
	longName := "shop-" + strings.Repeat("x", 60)
	badName := f.app(longName)
	// Requests above limits: the Deployment is invalid.
	badResources := f.app("greedy", func(a *webappv1.WebApp) {
		a.Spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}
	})
	// A Deployment of the same name that the WebApp does not control.
	f.create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: f.ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "other:1"}}},
			},
		},
	})
	taken := f.app("taken")
	for _, o := range []*webappv1.WebApp{badName, badResources, taken} {
		f.create(o)
	}
	f.start(time.Hour)

	for _, tc := range []struct {
		app    *webappv1.WebApp
		reason string
		texts  []string
	}{
		{badName, webapp.ReasonWriteRefused, []string{"Deployment " + f.ns + "/" + longName + " could not be written", "must be no more than 63", "at most 63 characters"}},
		{badResources, webapp.ReasonWriteRefused, []string{"Deployment " + f.ns + "/greedy could not be written", "must be less than or equal to cpu limit", "fix the WebApp spec"}},
		{taken, webapp.ReasonNameConflict, []string{"already exists and is controlled by nothing", "delete it or rename the WebApp"}},
	} {
		got := f.waitPhase(tc.app, webappv1.PhaseFailed)
		c := condition(got, conditions.Stalled)
		if c == nil || c.Reason != tc.reason {
			t.Errorf("%s: Stalled = %+v, want reason %s", tc.app.Name, c, tc.reason)
			continue
		}
		for _, text := range tc.texts {
			if !strings.Contains(c.Message, text) {
				t.Errorf("%s: message %q lacks %q", tc.app.Name, c.Message, text)
			}
		}
		if s := kstatus(t, got); s != status.FailedStatus {
			t.Errorf("%s: kstatus = %s, want Failed", tc.app.Name, s)
		}
	}
	d := &appsv1.Deployment{}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(taken), d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "other:1" || metav1.GetControllerOf(d) != nil {
		t.Errorf("the foreign Deployment was taken over: image %s, controller %+v", img, metav1.GetControllerOf(d))
	}

	f.update(badResources, func(a *webappv1.WebApp) { a.Spec.Resources.Limits = nil })
	got := f.waitPhase(badResources, webappv1.PhaseReconciling)
	if condition(got, conditions.Stalled) != nil {
		t.Errorf("still Stalled after the fix: %+v", got.Status.Conditions)
	}
}

// TestWebApp_DeletingPhaseAndGauge: while a finalizer holds a deleted WebApp it is Deleting, and
// the phase gauge counts it there; once it is gone the gauge forgets it.
func TestWebApp_DeletingPhaseAndGauge(t *testing.T) {
	f := newFixture(t)
	const hold = "test.slipway.dev/hold"
	a := f.app("bye", func(a *webappv1.WebApp) { a.Finalizers = []string{hold} })
	f.create(a)
	baseDeleting := webapp.PhaseCount(webappv1.PhaseDeleting)
	f.start(time.Hour)
	f.waitPhase(a, webappv1.PhaseReconciling)
	if err := f.c.Delete(f.ctx, f.get(a)); err != nil {
		t.Fatal(err)
	}
	got := f.waitFor(a, "bye is Deleting", func(got *webappv1.WebApp) bool { return got.Status.Phase == webappv1.PhaseDeleting })
	if c := condition(got, conditions.Ready); c == nil || c.Reason != webapp.ReasonDeleting || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", c)
	}
	f.eventually("the gauge counts one more Deleting", func() bool { return webapp.PhaseCount(webappv1.PhaseDeleting) == baseDeleting+1 })

	f.update(a, func(a *webappv1.WebApp) { a.Finalizers = nil })
	f.eventually("the gauge forgets the deleted WebApp", func() bool { return webapp.PhaseCount(webappv1.PhaseDeleting) == baseDeleting })
}

func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	testenv.Eventually(f.ctx, f.t, what, func() (bool, error) { return cond(), nil })
}

// waitEvent waits for an Event with reason about the WebApp.
func (f *fixture) waitEvent(a *webappv1.WebApp, reason string) {
	f.t.Helper()
	f.eventually("an Event "+reason, func() bool {
		var list eventsv1.EventList
		if err := f.c.List(f.ctx, &list, client.InNamespace(a.Namespace)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.UID == a.UID && e.Reason == reason {
				return true
			}
		}
		return false
	})
}
