package werfbundle

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// DriftDetected is True while the live release differs from the bundle.
const DriftDetected = "DriftDetected"

// computeStatus derives phase, conditions and lastErrorMessage from the reconcile's facts. It is
// the only place they are decided.
func (r *Reconciler) computeStatus(s *scope) {
	b := s.bundle
	st := &b.Status
	gen := b.Generation
	prev := st.Phase
	// What the push webhook selects on (see Trigger).
	st.Repository = receiver.NormalizeRepository(b.Spec.Registry.URL)

	if s.suspended {
		conditions.Remove(&st.Conditions, conditions.Reconciling)
		conditions.Set(&st.Conditions, gen, conditions.Ready, readyStatus(st.Conditions), ReasonSuspended,
			"Suspended: no polling, deploys or drift correction until spec.suspend is false")
		return
	}

	r.computeDrift(s)
	// A running drift check leaves phase and readiness alone; only a deploy is Syncing.
	job := s.active
	if job == nil {
		job = s.created
	}
	working := job != nil && job.Labels[LabelJobKind] == string(KindApply)
	switch {
	case s.failure != nil && !working:
		st.Phase = werfv1.PhaseFailed
		st.LastErrorMessage = s.failure.message
		conditions.Set(&st.Conditions, gen, conditions.Ready, metav1.ConditionFalse, s.failure.reason, s.failure.message)
		conditions.Remove(&st.Conditions, conditions.Reconciling)
		if s.failure.stalled {
			conditions.Set(&st.Conditions, gen, conditions.Stalled, metav1.ConditionTrue, s.failure.reason, s.failure.message)
		} else {
			conditions.Remove(&st.Conditions, conditions.Stalled)
		}
	case working:
		st.Phase = werfv1.PhaseSyncing
		msg := fmt.Sprintf("Running apply Job %s/%s for tag %s", job.Namespace, job.Name, job.Annotations[AnnotationTag])
		conditions.Set(&st.Conditions, gen, conditions.Reconciling, metav1.ConditionTrue, ReasonProgressing, msg)
		conditions.Remove(&st.Conditions, conditions.Stalled)
		conditions.Set(&st.Conditions, gen, conditions.Ready, metav1.ConditionFalse, ReasonProgressing, msg)
	case s.revision != "" && s.revision == st.LastAppliedRevision:
		st.Phase = werfv1.PhaseSynced
		st.LastErrorMessage = ""
		msg := fmt.Sprintf("Deployed tag %s", st.LastAppliedTag)
		conditions.Set(&st.Conditions, gen, conditions.Ready, metav1.ConditionTrue, ReasonSucceeded, msg)
		conditions.Remove(&st.Conditions, conditions.Stalled)
		if s.registryRetry != "" {
			conditions.Set(&st.Conditions, gen, conditions.Reconciling, metav1.ConditionTrue, ReasonRegistryRetrying, s.registryRetry)
		} else {
			conditions.Remove(&st.Conditions, conditions.Reconciling)
		}
	}
	if s.registryRetry != "" && s.failure == nil {
		// The registry is failing, under the failure threshold.
		st.LastErrorMessage = s.registryRetry
		if !working && st.Phase != werfv1.PhaseSynced {
			// Nothing deployed yet: trying to sync.
			if st.Phase == "" {
				st.Phase = werfv1.PhaseSyncing
			}
			conditions.Set(&st.Conditions, gen, conditions.Ready, metav1.ConditionFalse, ReasonRegistryRetrying, s.registryRetry)
			conditions.Set(&st.Conditions, gen, conditions.Reconciling, metav1.ConditionTrue, ReasonRegistryRetrying, s.registryRetry)
		}
	}
	if s.reconciled || s.failure != nil || job != nil {
		st.ObservedGeneration = gen
	}
	if st.Phase != prev && st.Phase != "" {
		warning := st.Phase == werfv1.PhaseFailed
		msg := conditions.Get(st.Conditions, conditions.Ready).Message
		s.events.PhaseChanged(warning, string(prev), string(st.Phase), msg)
	}
	phaseGauge(b)
}

// computeDrift sets DriftDetected from what the drift step saw; correction that gave up makes the
// bundle Failed.
func (r *Reconciler) computeDrift(s *scope) {
	b := s.bundle
	st := &b.Status
	dd := b.Spec.Converge.DriftDetection
	if !dd.Enabled {
		conditions.Remove(&st.Conditions, DriftDetected)
		return
	}
	gen := b.Generation
	switch {
	case s.driftClean:
		conditions.Set(&st.Conditions, gen, DriftDetected, metav1.ConditionFalse, ReasonNoDrift, "The live release matches the bundle")
	case s.driftCheckErr != "":
		conditions.Set(&st.Conditions, gen, DriftDetected, metav1.ConditionUnknown, ReasonDriftCheckFailed, s.driftCheckErr)
	case s.driftFound != "" || exhausted(st):
		d := st.Drift
		if d.Corrections >= dd.MaxRetries && s.created == nil && s.active == nil {
			if s.driftFound == "" {
				s.driftFound = d.Summary
			}
			msg := fmt.Sprintf("drift remains after %d corrections; inspect the release (log %s) and re-apply with the %s annotation: %s",
				d.Corrections, st.LastJobLog, werfv1.ReconcileNowAnnotation, s.driftFound)
			conditions.Set(&st.Conditions, gen, DriftDetected, metav1.ConditionTrue, ReasonDriftNotCorrected, msg)
			s.fail(&failure{reason: ReasonDriftNotCorrected, message: msg, stalled: true})
			return
		}
		conditions.Set(&st.Conditions, gen, DriftDetected, metav1.ConditionTrue, ReasonDriftCorrecting, "Drift found, re-applying: "+s.driftFound)
	}
}

// exhausted reports a drift that correction gave up on, kept until a check finds none.
func exhausted(st *werfv1.WerfBundleStatus) bool {
	c := conditions.Get(st.Conditions, DriftDetected)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonDriftNotCorrected
}

func readyStatus(conds []metav1.Condition) metav1.ConditionStatus {
	if c := conditions.Get(conds, conditions.Ready); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}
