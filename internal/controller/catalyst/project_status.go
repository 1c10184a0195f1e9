package catalyst

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// computeProjectStatus derives SourceReady, Ready, Reconciling and Stalled, the count and the
// validation fields from the reconcile's facts. It is the only place they are decided.
func (r *ProjectReconciler) computeProjectStatus(s *projectScope) {
	p := s.project
	st := &p.Status
	gen := p.Generation
	wasReady := conditions.IsTrue(st.Conditions, conditions.Ready)

	if s.countKnown {
		st.Environments = s.envCount
	}
	if s.validated {
		st.LastValidatedTime = &metav1.Time{Time: s.now.UTC().Truncate(time.Second)}
		if s.source.ok {
			st.SourceCommit = s.head
			st.ObservedGeneration = gen
		}
		status := metav1.ConditionFalse
		if s.source.ok {
			status = metav1.ConditionTrue
		}
		conditions.Set(&st.Conditions, gen, catalystv1alpha1.SourceReadyCondition, status, s.source.reason, s.source.message)
	} else if conditions.Get(st.Conditions, catalystv1alpha1.SourceReadyCondition) == nil && s.secretsErr == "" {
		conditions.Set(&st.Conditions, gen, catalystv1alpha1.SourceReadyCondition, metav1.ConditionUnknown,
			catalystv1alpha1.ProgressingReason, "Validating the source")
	}
	source := conditions.Get(st.Conditions, catalystv1alpha1.SourceReadyCondition)
	var ready verdict
	stalled := false
	switch {
	case s.secretsErr != "":
		ready = verdict{metav1.ConditionFalse, catalystv1alpha1.SecretNotFoundReason, s.secretsErr}
		stalled = true
		if source == nil || source.Status != metav1.ConditionFalse {
			conditions.Set(&st.Conditions, gen, catalystv1alpha1.SourceReadyCondition, metav1.ConditionUnknown,
				catalystv1alpha1.SecretNotFoundReason, "Not validated: see the Ready condition")
		}
	case source != nil && source.Status == metav1.ConditionTrue && st.ObservedGeneration == gen:
		ready = verdict{metav1.ConditionTrue, catalystv1alpha1.SucceededReason, "The source is valid: " + source.Message + wildcardNote(p)}
	case source != nil && source.Status == metav1.ConditionFalse:
		ready = verdict{metav1.ConditionFalse, source.Reason, source.Message}
		stalled = s.stalled || (!s.validated && isStalledReason(source.Reason))
	default:
		ready = verdict{metav1.ConditionFalse, catalystv1alpha1.ProgressingReason, "Validating the source"}
	}
	conditions.Set(&st.Conditions, gen, conditions.Ready, ready.status, ready.reason, ready.message)
	if stalled {
		conditions.Set(&st.Conditions, gen, conditions.Stalled, metav1.ConditionTrue, ready.reason, ready.message)
		conditions.Remove(&st.Conditions, conditions.Reconciling)
	} else if ready.status != metav1.ConditionTrue {
		conditions.Set(&st.Conditions, gen, conditions.Reconciling, metav1.ConditionTrue, ready.reason, ready.message)
		conditions.Remove(&st.Conditions, conditions.Stalled)
	} else {
		conditions.Remove(&st.Conditions, conditions.Reconciling)
		conditions.Remove(&st.Conditions, conditions.Stalled)
	}
	if isReady := ready.status == metav1.ConditionTrue; isReady != wasReady {
		s.events.Add(!isReady, ready.reason, fmt.Sprintf("Ready %t -> %t: %s", wasReady, isReady, ready.message))
	}
}

// isStalledReason reports the source failures a retry cannot fix.
func isStalledReason(reason string) bool {
	switch reason {
	case catalystv1alpha1.SourceUnavailableReason, catalystv1alpha1.ProgressingReason:
		return false
	}
	return true
}

// wildcardNote tells the owner of a Project that names a wildcard certificate where it must go:
// it is no longer copied into environment namespaces (a pull request's code could read its key),
// the Ingresses name no Secret and the ingress controller serves its default certificate.
func wildcardNote(p *catalystv1alpha1.Project) string {
	tls := p.Spec.Preview.TLS
	if tls == nil || tls.WildcardSecretRef == nil {
		return ""
	}
	return fmt.Sprintf("; spec.preview.tls.wildcardSecretRef: the wildcard certificate is not copied into environment namespaces, "+
		"their Ingresses use the ingress controller's default certificate: give it the wildcard once "+
		"(ingress-nginx: copy the Secret into the controller's namespace and start it with --default-ssl-certificate=%s/%s), "+
		"or use spec.preview.tls.clusterIssuer", p.Namespace, tls.WildcardSecretRef.Name)
}
