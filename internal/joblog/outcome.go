package joblog

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Finished reports whether the Job ended (a Complete or Failed condition) and whether it
// succeeded.
func Finished(j *batchv1.Job) (finished, succeeded bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true
		case batchv1.JobFailed:
			return true, false
		}
	}
	return false, false
}

// FailureMessage is the Job's Failed condition, e.g. "BackoffLimitExceeded: Job has reached the
// specified backoff limit".
func FailureMessage(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return "the Job failed"
}

// OutcomeChanged reports whether an update of a Job changed its outcome (see Finished), for the
// predicates of controllers that act when their Jobs end and not on the progress in between
// (active and ready counts, which the Job controller updates several times per pod). It takes
// runtime.Object, not controller-runtime's client.Object, so that the package links no client.
func OutcomeChanged(old, new runtime.Object) bool {
	o, ok1 := old.(*batchv1.Job)
	n, ok2 := new.(*batchv1.Job)
	if !ok1 || !ok2 {
		return true
	}
	d1, s1 := Finished(o)
	d2, s2 := Finished(n)
	return d1 != d2 || s1 != s2
}
