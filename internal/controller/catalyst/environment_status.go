package catalyst

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// verdict is one condition as computeStatus decides it.
type verdict struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// summary is the environment as a whole: its phase, its Ready condition, and whether it is
// working (Reconciling) or needs a human (Stalled).
type summary struct {
	phase   catalystv1alpha1.Phase
	ready   verdict
	stalled bool
	working bool
}

// computeStatus derives phase, conditions and the status fields from the reconcile's facts. It is
// the only place they are decided. An unexpected error leaves the status as it was.
func (r *EnvironmentReconciler) computeStatus(s *envScope) {
	env := s.env
	st := &env.Status
	gen := env.Generation
	prev := st.Phase
	if s.err != nil && s.failure == nil {
		return
	}

	// Facts into fields.
	if s.ttlKnown {
		if s.expiresAt != nil {
			st.ExpiresAt = &metav1.Time{Time: *s.expiresAt}
		} else {
			st.ExpiresAt = nil
		}
	}
	if s.nsName != "" {
		st.Namespace = s.nsName
	}
	if s.project != nil && !s.deleting {
		st.ObservedCommit = env.Spec.Source.CommitSHA
	}
	if s.build != nil || (s.failure != nil && s.failure.condition == catalystv1alpha1.BuildReadyCondition) {
		st.Image = s.image
		st.BuildJob = s.buildJob
	}
	if s.freshDeploy {
		st.EnvVarContainers = s.envContainers
	}
	if s.deployed && s.revision != "" {
		st.DeployedRevision = s.revision
	} else if s.ready != nil && !s.deployed {
		// A deployed object was deleted: deploy again.
		st.DeployedRevision = ""
	}

	if !s.deleting && !s.expired {
		ns, build, deploy := conditionVerdicts(s)
		for _, c := range []struct {
			typ string
			v   *verdict
		}{
			{catalystv1alpha1.NamespaceReadyCondition, ns},
			{catalystv1alpha1.BuildReadyCondition, build},
			{catalystv1alpha1.DeploymentReadyCondition, deploy},
		} {
			if c.v != nil {
				conditions.Set(&st.Conditions, gen, c.typ, c.v.status, c.v.reason, c.v.message)
			}
		}
	}
	sum := decide(s, prev)
	st.Phase = sum.phase
	conditions.Set(&st.Conditions, gen, conditions.Ready, sum.ready.status, sum.ready.reason, sum.ready.message)
	if sum.working {
		conditions.Set(&st.Conditions, gen, conditions.Reconciling, metav1.ConditionTrue, sum.ready.reason, sum.ready.message)
	} else {
		conditions.Remove(&st.Conditions, conditions.Reconciling)
	}
	if sum.stalled {
		conditions.Set(&st.Conditions, gen, conditions.Stalled, metav1.ConditionTrue, sum.ready.reason, sum.ready.message)
	} else {
		conditions.Remove(&st.Conditions, conditions.Stalled)
	}
	switch {
	case sum.phase == catalystv1alpha1.PhaseReady && s.project != nil:
		st.URL = urlFor(s.project, s.host)
	case s.project != nil && s.ready != nil && st.URL != urlFor(s.project, s.host):
		// The host changed: the old URL no longer serves this environment.
		st.URL = ""
	}
	// A generation is observed once its reconcile ran every step, or stopped on a failure that
	// needs a human; transient failures and work in progress leave it to the next reconcile.
	if s.reconciled || (s.failure != nil && s.failure.stalled) {
		st.ObservedGeneration = gen
	}
	if st.Phase != prev && st.Phase != "" {
		s.events.PhaseChanged(st.Phase == catalystv1alpha1.PhaseFailed, string(prev), string(st.Phase), sum.ready.message)
	}
}

// conditionVerdicts decides NamespaceReady, BuildReady and DeploymentReady. A condition whose
// step did not run in this reconcile is Unknown, with the reason that held it back; nil leaves it
// as it is.
func conditionVerdicts(s *envScope) (ns, build, deploy *verdict) {
	f := s.failure
	failedAt := func(typ string) bool { return f != nil && f.condition == typ }
	// waiting is the verdict of a condition behind an earlier one that is not there yet.
	waiting := func(what string) *verdict {
		if f != nil {
			return &verdict{metav1.ConditionUnknown, f.reason, "Not evaluated: see the Ready condition"}
		}
		return &verdict{metav1.ConditionUnknown, catalystv1alpha1.ProgressingReason, "Waiting for " + what}
	}
	switch {
	case failedAt(catalystv1alpha1.NamespaceReadyCondition):
		ns = &verdict{metav1.ConditionFalse, f.reason, f.message}
	case s.nsReady:
		ns = &verdict{metav1.ConditionTrue, catalystv1alpha1.SucceededReason, s.nsMessage}
	case s.nsMessage != "":
		ns = &verdict{metav1.ConditionFalse, catalystv1alpha1.ProgressingReason, s.nsMessage}
	default:
		ns = waiting("the Project")
	}
	switch {
	case failedAt(catalystv1alpha1.BuildReadyCondition):
		build = &verdict{metav1.ConditionFalse, f.reason, f.message}
	case s.build != nil && s.build.ok:
		build = &verdict{metav1.ConditionTrue, s.build.reason, s.build.message}
	case s.build != nil:
		build = &verdict{metav1.ConditionFalse, s.build.reason, s.build.message}
	default:
		build = waiting("the namespace")
	}
	switch {
	case failedAt(catalystv1alpha1.DeploymentReadyCondition):
		deploy = &verdict{metav1.ConditionFalse, f.reason, f.message}
	case s.ready != nil && s.ready.ok:
		deploy = &verdict{metav1.ConditionTrue, catalystv1alpha1.SucceededReason,
			fmt.Sprintf("Deployed commit %s (revision %s): %s", shortSHA(s.env.Spec.Source.CommitSHA), s.revision, s.ready.message)}
	case s.ready != nil:
		deploy = &verdict{metav1.ConditionFalse, s.ready.reason, s.ready.message}
	case s.build != nil && s.build.ok:
		deploy = waiting("the deploy")
	default:
		deploy = waiting("the image")
	}
	return ns, build, deploy
}

// decide picks the phase and the Ready condition: deletion first, then what stops the
// environment, then how far it got.
func decide(s *envScope, prev catalystv1alpha1.Phase) summary {
	keep := prev
	if keep == "" {
		keep = catalystv1alpha1.PhasePending
	}
	switch {
	case s.deleting:
		msg := s.deleteNote
		if msg == "" {
			msg = "Deleting: the namespace is gone, releasing the Environment"
		}
		return summary{phase: keep, ready: verdict{metav1.ConditionFalse, catalystv1alpha1.DeletingReason, msg}, working: true}
	case s.expired:
		return summary{phase: keep, working: true, ready: verdict{metav1.ConditionFalse, catalystv1alpha1.ExpiredReason,
			"The TTL expired; deleting the Environment"}}
	case s.failure != nil:
		f := s.failure
		phase := f.phase
		if phase == "" {
			phase = progressPhase(s)
		}
		return summary{phase: phase, stalled: f.stalled, working: !f.stalled,
			ready: verdict{metav1.ConditionFalse, f.reason, f.message}}
	case s.ready != nil && s.ready.ok:
		msg := "Serving " + urlFor(s.project, s.host)
		if s.host == "" {
			msg = "Deployed; no preview domain is set (Project spec.preview.domain or --catalyst-preview-domain), so there is no Ingress and no URL"
		}
		return summary{phase: catalystv1alpha1.PhaseReady, ready: verdict{metav1.ConditionTrue, catalystv1alpha1.SucceededReason, msg}}
	}
	phase := progressPhase(s)
	v := verdict{metav1.ConditionFalse, catalystv1alpha1.ProgressingReason, "Preparing the namespace"}
	switch {
	case s.ready != nil:
		v = verdict{metav1.ConditionFalse, s.ready.reason, s.ready.message}
	case s.build != nil && !s.build.ok:
		v = verdict{metav1.ConditionFalse, s.build.reason, s.build.message}
	case s.nsMessage != "" && !s.nsReady:
		v.message = s.nsMessage
	}
	return summary{phase: phase, ready: v, working: true}
}

// progressPhase is the phase of how far the reconcile got.
func progressPhase(s *envScope) catalystv1alpha1.Phase {
	switch {
	case s.ready != nil || (s.build != nil && s.build.ok):
		return catalystv1alpha1.PhaseDeploying
	case s.build != nil || s.failure != nil && s.failure.condition == catalystv1alpha1.BuildReadyCondition:
		return catalystv1alpha1.PhaseBuilding
	}
	return catalystv1alpha1.PhasePending
}
