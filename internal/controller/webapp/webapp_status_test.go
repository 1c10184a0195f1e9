package webapp

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

func TestDecide(t *testing.T) {
	const (
		reconciling = webappv1.PhaseReconciling
		waiting     = webappv1.PhaseWaitingForPods
		ready       = webappv1.PhaseReady
		scaling     = webappv1.PhaseScaling
		failed      = webappv1.PhaseFailed
		deleting    = webappv1.PhaseDeleting
	)
	deadline := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: ReasonProgressDeadlineExceeded, Message: "timed out"}
	quota := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: "exceeded quota"}
	for _, tc := range []struct {
		name     string
		s        scope
		d        *appsv1.Deployment // nil: no Deployment
		prev     webappv1.Phase
		want     webappv1.Phase
		stalled  bool
		contains string
	}{
		{name: "deleting wins", s: scope{deleting: true, failure: &failure{reason: "x"}}, want: deleting},
		{name: "refused write", s: scope{failure: &failure{reason: ReasonWriteRefused, message: "bad"}}, want: failed, stalled: true, contains: "bad"},
		{name: "transient write error", s: scope{retrying: "timeout"}, prev: ready, want: reconciling, contains: "timeout"},
		{name: "just created", d: dep(2, 1, 0, 0, 0, 0), want: reconciling},
		{name: "observed, no pods yet", d: dep(2, 1, 1, 0, 0, 0), prev: reconciling, want: waiting},
		{name: "pods coming", d: dep(2, 1, 1, 2, 2, 1), prev: waiting, want: waiting, contains: "2/2 replicas updated, 1 available"},
		{name: "quota hit", d: dep(2, 1, 1, 0, 0, 0, quota), prev: waiting, want: waiting, contains: "exceeded quota"},
		{name: "all available", d: dep(2, 1, 1, 2, 2, 2), prev: waiting, want: ready},
		{name: "zero replicas", d: dep(0, 1, 1, 0, 0, 0), prev: reconciling, want: ready},
		{name: "old pods still there", d: dep(2, 2, 2, 3, 2, 2), prev: waiting, want: waiting},
		{name: "deadline exceeded", d: dep(2, 1, 1, 2, 2, 0, deadline), prev: waiting, want: failed, stalled: true, contains: "timed out"},
		{name: "deadline of an older generation", d: dep(2, 2, 1, 2, 2, 0, deadline), prev: failed, want: reconciling},
		{name: "scale from Ready, not yet observed", s: scope{replicasChanged: true}, d: dep(3, 2, 1, 2, 2, 2), prev: ready, want: scaling},
		{name: "scale observed, converging", d: dep(3, 2, 2, 3, 3, 2), prev: scaling, want: scaling, contains: "Scaling to 3 replicas: 3/3 replicas updated, 2 available"},
		{name: "scale done", d: dep(3, 2, 2, 3, 3, 3), prev: scaling, want: ready},
		{name: "scale and new image is a rollout", s: scope{replicasChanged: true, templateChanged: true}, d: dep(3, 2, 1, 2, 2, 2), prev: ready, want: reconciling},
		{name: "replica change of a WebApp never Ready", s: scope{replicasChanged: true}, d: dep(3, 2, 1, 2, 2, 1), prev: waiting, want: reconciling},
		{name: "image change from Ready", s: scope{templateChanged: true}, d: dep(2, 2, 1, 2, 2, 2), prev: ready, want: reconciling},
		// A reconcile right after the one that applied may read the WebApp's previous phase.
		{name: "stale Ready, scale not yet observed", d: dep(3, 2, 1, 2, 2, 2), prev: ready, want: scaling},
		{name: "stale Ready, image change not yet observed", d: dep(2, 2, 1, 2, 2, 2), prev: ready, want: reconciling},
		{name: "stale Ready, rollout observed", d: dep(2, 2, 2, 3, 1, 2), prev: ready, want: waiting},
		{name: "scale down observed", d: dep(1, 2, 2, 3, 3, 3), prev: scaling, want: scaling},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.app = &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			if tc.d != nil {
				s.deployment = tc.d
				s.app.Spec.Replicas = tc.d.Spec.Replicas
			}
			v := decide(&s, tc.prev)
			if v.phase != tc.want || v.stalled != tc.stalled || !strings.Contains(v.message, tc.contains) {
				t.Errorf("decide = %+v, want phase %s stalled %v containing %q", v, tc.want, tc.stalled, tc.contains)
			}
		})
	}
}

// dep is a Deployment wanting `want` replicas at generation gen, observed at obs, with counts.
func dep(want int32, gen, obs int64, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: gen},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(want),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelInstance: "web"}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: obs, Replicas: replicas, UpdatedReplicas: updated,
			AvailableReplicas: available, Conditions: conds},
	}
}

// TestComputeStatus_Conditions: Ready always; Reconciling only while work is under way; Stalled
// only while a human must act; observedGeneration not after a transient error.
func TestComputeStatus_Conditions(t *testing.T) {
	r := &Reconciler{}
	app := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 4}}
	s := &scope{app: app, retrying: "apiserver timeout"}
	r.computeStatus(s)
	if app.Status.ObservedGeneration != 0 || !conditions.IsTrue(app.Status.Conditions, conditions.Reconciling) {
		t.Errorf("transient error: observedGeneration %d, conditions %+v", app.Status.ObservedGeneration, app.Status.Conditions)
	}

	s = &scope{app: app, failure: &failure{reason: ReasonWriteRefused, message: "invalid"}}
	r.computeStatus(s)
	if app.Status.ObservedGeneration != 4 || !conditions.IsTrue(app.Status.Conditions, conditions.Stalled) ||
		conditions.Get(app.Status.Conditions, conditions.Reconciling) != nil {
		t.Errorf("stalled: observedGeneration %d, conditions %+v", app.Status.ObservedGeneration, app.Status.Conditions)
	}
	if len(s.events) != 1 || !s.events[0].Warning || s.events[0].Reason != "PhaseFailed" {
		t.Errorf("events = %+v, want one Warning PhaseFailed", s.events)
	}

	s = &scope{app: app, reconciled: true, deployment: dep(1, 1, 1, 1, 1, 1), service: &corev1.Service{}}
	app.Spec.Replicas = ptr.To[int32](1)
	r.computeStatus(s)
	st := app.Status
	if st.Phase != webappv1.PhaseReady || conditions.Get(st.Conditions, conditions.Stalled) != nil ||
		conditions.Get(st.Conditions, conditions.Reconciling) != nil || !conditions.IsTrue(st.Conditions, conditions.Ready) {
		t.Errorf("ready: %+v", st)
	}
	if st.URL != "http://web.ns.svc:80" || st.Selector != "app.kubernetes.io/instance=web,app.kubernetes.io/name=web" {
		t.Errorf("url %q selector %q", st.URL, st.Selector)
	}
}
