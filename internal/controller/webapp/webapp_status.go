package webapp

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/operator/notes"
)

// verdict is what the reconcile's facts say about the WebApp.
type verdict struct {
	phase   webappv1.Phase
	reason  string
	message string
	// stalled: a human must act.
	stalled bool
}

// computeStatus derives phase, conditions and the replica counts from the reconcile's facts. It is
// the only place they are decided.
func (r *Reconciler) computeStatus(s *scope) {
	app := s.app
	st := &app.Status
	gen := app.Generation
	prev := st.Phase
	v := decide(s, prev)

	st.Phase = v.phase
	st.Selector = Selector(app)
	if s.service != nil {
		st.URL = URL(app)
	}
	if d := s.deployment; d != nil {
		st.Replicas, st.UpdatedReplicas, st.AvailableReplicas = d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas
	}
	ready := metav1.ConditionFalse
	if v.phase == webappv1.PhaseReady {
		ready = metav1.ConditionTrue
	}
	conditions.Set(&st.Conditions, gen, conditions.Ready, ready, v.reason, v.message)
	progressing := metav1.ConditionFalse
	switch v.phase {
	case webappv1.PhaseReconciling, webappv1.PhaseWaitingForPods, webappv1.PhaseScaling:
		progressing = metav1.ConditionTrue
	}
	conditions.Set(&st.Conditions, gen, webappv1.ConditionProgressing, progressing, v.reason, v.message)
	if progressing == metav1.ConditionTrue || v.phase == webappv1.PhaseDeleting {
		conditions.Set(&st.Conditions, gen, conditions.Reconciling, metav1.ConditionTrue, v.reason, v.message)
	} else {
		conditions.Remove(&st.Conditions, conditions.Reconciling)
	}
	if v.stalled {
		conditions.Set(&st.Conditions, gen, conditions.Stalled, metav1.ConditionTrue, v.reason, v.message)
	} else {
		conditions.Remove(&st.Conditions, conditions.Stalled)
	}
	setAvailable(st, gen, s.deployment)
	// A generation is observed once its reconcile ends with the objects applied or with a failure
	// that needs a human; a transient error leaves it to the retry.
	if s.reconciled || (s.failure != nil && s.retrying == "") {
		st.ObservedGeneration = gen
	}
	if st.Phase != prev {
		s.eventf(st.Phase == webappv1.PhaseFailed, "Phase"+string(st.Phase), notes.PhaseMessage(string(prev), string(st.Phase), v.message))
	}
}

// decide picks the phase: deletion first, then what stops the WebApp, then the Deployment's
// progress.
func decide(s *scope, prev webappv1.Phase) verdict {
	switch {
	case s.deleting:
		return verdict{phase: webappv1.PhaseDeleting, reason: ReasonDeleting,
			message: "Deleting; the garbage collector removes the Deployment and the Service"}
	case s.failure != nil:
		return verdict{phase: webappv1.PhaseFailed, reason: s.failure.reason, message: s.failure.message, stalled: true}
	case s.retrying != "":
		return verdict{phase: webappv1.PhaseReconciling, reason: ReasonWriteRetrying, message: s.retrying}
	case s.deployment == nil:
		return verdict{phase: webappv1.PhaseReconciling, reason: ReasonCreating, message: "Creating the Deployment"}
	}
	// Scaling is a replica change of a WebApp that was serving (Ready, or already Scaling) with no
	// new pod template. prev may come from a cache that has not seen the last status write yet,
	// so the Deployment itself tells a scale from a rollout wherever it can.
	serving := prev == webappv1.PhaseReady || prev == webappv1.PhaseScaling
	d := s.deployment
	want := replicasOf(s.app)
	scaling := serving && !s.templateChanged && (s.replicasChanged || d.Status.Replicas != want)
	v := deploymentVerdict(d, want, scaling, serving)
	if strings.Contains(v.message, "violates PodSecurity") && s.app.Spec.PodSecurity != webappv1.PodSecurityRestricted {
		v.message += "; the namespace enforces a stricter Pod Security level than the pods meet (spec.podSecurity: baseline): " +
			"set spec.podSecurity to restricted (the image must run as a numeric non-root user)"
	}
	return v
}

// deploymentVerdict reads the Deployment's progress toward want replicas. scaling says whether a
// change the Deployment controller has not observed yet is a scale; once it has, a WebApp that was
// serving is Scaling while every pod runs the current template (no rollout) and the counts differ.
func deploymentVerdict(d *appsv1.Deployment, want int32, scaling, serving bool) verdict {
	st := d.Status
	observed := st.ObservedGeneration >= d.Generation && d.Generation > 0
	if c := deploymentCondition(d, appsv1.DeploymentProgressing); observed && c != nil &&
		c.Status == corev1.ConditionFalse && c.Reason == ReasonProgressDeadlineExceeded {
		return verdict{phase: webappv1.PhaseFailed, reason: ReasonProgressDeadlineExceeded, stalled: true, message: fmt.Sprintf(
			"Deployment %s made no progress within its deadline (%d/%d replicas available): %s; check that the image "+
				"can be pulled (spec.image, spec.imagePullSecrets), that the pods fit the nodes and the namespace quota "+
				"(spec.resources) and that they pass the readiness probe (spec.healthCheckPath); see kubectl describe pods -l %s",
			d.Name, st.AvailableReplicas, want, c.Message, selectorOf(d))}
	}
	if !observed {
		if scaling {
			return verdict{phase: webappv1.PhaseScaling, reason: ReasonScaling,
				message: fmt.Sprintf("Scaling to %d replicas", want)}
		}
		return verdict{phase: webappv1.PhaseReconciling, reason: ReasonCreating,
			message: fmt.Sprintf("Applied Deployment %s; waiting for the Deployment controller", d.Name)}
	}
	done := st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want
	if done {
		return verdict{phase: webappv1.PhaseReady, reason: ReasonAvailable,
			message: fmt.Sprintf("%d/%d replicas available", st.AvailableReplicas, want)}
	}
	progress := fmt.Sprintf("%d/%d replicas updated, %d available", st.UpdatedReplicas, want, st.AvailableReplicas)
	if c := deploymentCondition(d, appsv1.DeploymentReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
		progress += "; " + c.Reason + ": " + c.Message
	}
	if serving && st.UpdatedReplicas == st.Replicas {
		return verdict{phase: webappv1.PhaseScaling, reason: ReasonScaling,
			message: fmt.Sprintf("Scaling to %d replicas: %s", want, progress)}
	}
	return verdict{phase: webappv1.PhaseWaitingForPods, reason: ReasonRollingOut, message: "Waiting for pods: " + progress}
}

// setAvailable mirrors the Deployment's Available condition.
func setAvailable(st *webappv1.WebAppStatus, gen int64, d *appsv1.Deployment) {
	var c *appsv1.DeploymentCondition
	if d != nil {
		c = deploymentCondition(d, appsv1.DeploymentAvailable)
	}
	if c == nil {
		conditions.Set(&st.Conditions, gen, webappv1.ConditionAvailable, metav1.ConditionUnknown, ReasonPending,
			"The Deployment reports no availability yet")
		return
	}
	conditions.Set(&st.Conditions, gen, webappv1.ConditionAvailable, metav1.ConditionStatus(c.Status), c.Reason, c.Message)
}

func deploymentCondition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == typ {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func selectorOf(d *appsv1.Deployment) string {
	if d.Spec.Selector == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return ""
	}
	return s.String()
}
