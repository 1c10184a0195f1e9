package werfbundle

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/joblog"
)

// recordCheck turns a finished drift-check Job into status: exit 0 no drift, exit 2 drift (the
// plan found changes), anything else a check that could not tell.
func (r *Reconciler) recordCheck(s *scope, j *batchv1.Job, ok bool, exit int32, logTail string) {
	b := s.bundle
	d := b.Status.Drift
	if d == nil {
		d = &werfv1.DriftStatus{}
		b.Status.Drift = d
	}
	now := metav1.NewTime(s.now)
	d.LastCheckTime = &now
	switch {
	case ok:
		driftChecks.WithLabelValues("clean").Inc()
		d.Corrections = 0
		d.Summary = ""
		s.driftClean = true
	case exit == driftExitCode:
		driftChecks.WithLabelValues("drift").Inc()
		summary := tailLines(logTail, 15, 1024)
		if summary == "" {
			summary = "the live release differs from the bundle"
		}
		d.Summary = summary
		s.driftFound = summary
		s.eventf(true, ReasonDriftDetected, fmt.Sprintf("Drift detected by Job %s/%s", j.Namespace, j.Name))
	default:
		driftChecks.WithLabelValues("error").Inc()
		s.driftCheckErr = fmt.Sprintf("drift check Job %s/%s failed: %s", j.Namespace, j.Name, joblog.FailureMessage(j))
	}
}

// stepDrift runs when the bundle is Synced: it corrects drift a check found (at most maxRetries
// re-applies in a row) and runs the next check when it is due.
func (r *Reconciler) stepDrift(ctx context.Context, s *scope) error {
	b := s.bundle
	dd := b.Spec.Converge.DriftDetection
	if !dd.Enabled || s.revision == "" || s.revision != b.Status.LastAppliedRevision {
		return nil
	}
	d := b.Status.Drift
	if d == nil {
		d = &werfv1.DriftStatus{}
		b.Status.Drift = d
	}
	if s.driftFound != "" {
		if d.Corrections >= dd.MaxRetries {
			return nil // computeStatus reports that correction gave up
		}
		d.Corrections++
		driftCorrections.Inc()
		s.eventf(false, ReasonDriftCorrecting, fmt.Sprintf("Re-applying tag %s to correct drift (%d of %d)",
			b.Status.LastAppliedTag, d.Corrections, dd.MaxRetries))
		return r.createJob(ctx, s, jobRequest{Kind: KindApply, Tag: b.Status.LastAppliedTag, Correction: d.Corrections,
			Revision: b.Status.LastAppliedRevision, Nonce: "drift-" + strconv.Itoa(int(d.Corrections)) + "-" + d.LastCheckTime.UTC().Format("20060102T150405")})
	}
	interval := defaultPollInterval
	if dd.Interval != nil && dd.Interval.Duration > 0 {
		interval = dd.Interval.Duration
	}
	last := d.LastCheckTime
	if last == nil {
		last = b.Status.LastSyncTime
	}
	if last != nil {
		if wait := last.Add(interval).Sub(s.now); wait > 0 {
			s.requeue(wait)
			return nil
		}
	}
	return r.createJob(ctx, s, jobRequest{Kind: KindCheck, Tag: b.Status.LastAppliedTag,
		Revision: b.Status.LastAppliedRevision, Nonce: s.now.UTC().Format("20060102T150405")})
}

// adoptCorrection counts the drift correction a Job makes when the status write that counted it
// was lost (the operator stopped right after creating the Job).
func adoptCorrection(b *werfv1.WerfBundle, j *batchv1.Job) {
	n, err := strconv.Atoi(j.Annotations[AnnotationDriftCorrection])
	if err != nil || n <= 0 {
		return
	}
	if b.Status.Drift == nil {
		b.Status.Drift = &werfv1.DriftStatus{}
	}
	b.Status.Drift.Corrections = max(b.Status.Drift.Corrections, int32(n))
}
