// Package conditions holds the condition vocabulary every slipway controller shares and small
// helpers over []metav1.Condition. Ready is always present; Reconciling and Stalled only while
// true, so kstatus reads the object right.
package conditions

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types shared by every kind.
const (
	// Ready says whether the object's desired state is achieved.
	Ready = "Ready"
	// Reconciling is present (True) while the controller works toward the desired state.
	Reconciling = "Reconciling"
	// Stalled is present (True) when progress needs a human: a bad spec or a missing prerequisite.
	Stalled = "Stalled"
)

// Set sets a condition, keeping LastTransitionTime when the status does not change.
func Set(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: generation,
		Reason:             reason,
		Message:            truncate(message),
	})
}

// Remove deletes a condition.
func Remove(conds *[]metav1.Condition, typ string) { meta.RemoveStatusCondition(conds, typ) }

// IsTrue reports whether the condition is present and True.
func IsTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// Get returns the condition or nil.
func Get(conds []metav1.Condition, typ string) *metav1.Condition {
	return meta.FindStatusCondition(conds, typ)
}

// maxMessage keeps messages within the API's 32 KiB limit with room to spare.
const maxMessage = 4096

// truncate cuts s to maxMessage bytes at a character boundary: a character cut in two would be
// stored as U+FFFD (JSON), and the next reconcile, cutting the same message again, would see a
// change and write it again.
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
