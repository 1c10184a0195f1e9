package werfbundle

import (
	"math/rand/v2"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/tags"
	"github.com/slipway-dev/slipway/internal/operator/notes"
	"github.com/slipway-dev/slipway/internal/registry"
)

// scope carries one reconcile's facts from the steps to computeStatus.
type scope struct {
	bundle *werfv1.WerfBundle
	now    time.Time

	// resolved spec
	targetNS   string
	release    string
	constraint *tags.Constraint
	// crossNamespace: the bundle may deploy into another namespace (accepted there, or allowed
	// by the operator), and read values there.
	crossNamespace bool

	// registry
	access       *accessResult // registry settings, read once
	polled       bool          // a registry request was made in this reconcile
	registryTime time.Duration
	notModified  bool   // ... and answered 304
	latestTag    string // highest matching tag known
	noMatch      error  // no tag matches the constraint

	// values and revision
	valuesYAML []byte
	revision   string

	// Jobs of this bundle, newest first, and the one still running.
	jobs   []batchv1.Job
	active *batchv1.Job
	// created is the Job made in this reconcile.
	created *batchv1.Job
	// owners are Jobs whose Secrets still need them as their owner: the write waits for the
	// status write (StatusDelay).
	owners []*batchv1.Job

	// registryRetry describes a registry failure still under the failure threshold.
	registryRetry string
	// jobFailed is set when a deploy Job's failure was recorded in this reconcile.
	jobFailed string
	// rollbackOf is the failed revision to roll back from (rollbackOnFailure).
	rollbackOf string
	// driftFound is the summary of drift a check Job found in this reconcile.
	driftFound string
	// driftClean is set when a check found no drift; driftCheckErr when a check could not tell.
	driftClean    bool
	driftCheckErr string

	// failure is what stops the bundle from being Synced, for status.
	failure *failure
	// suspended is spec.suspend.
	suspended bool
	// reconciled is true when every step ran.
	reconciled bool

	// next is when to come back (zero: only on events).
	next time.Duration

	events notes.Notes
}

// failure describes why the bundle is not Synced.
type failure struct {
	reason  string
	message string
	// stalled: a human must act (bad spec, missing prerequisite, bad credentials).
	stalled bool
	// counts: the failure counts toward consecutiveFailures (registry and deploy failures do).
	counts bool
}

func newScope(b *werfv1.WerfBundle, now time.Time) *scope {
	return &scope{bundle: b, now: now}
}

// requeue asks to come back after d, keeping the earliest request. Callers jitter d where the
// wait is an interval.
func (s *scope) requeue(d time.Duration) {
	if s.next == 0 || d < s.next {
		s.next = d
	}
}

func (s *scope) fail(f *failure) {
	if s.failure == nil {
		s.failure = f
	}
}

func (s *scope) result() ctrl.Result {
	return ctrl.Result{RequeueAfter: s.next}
}

func (s *scope) eventf(warning bool, reason, message string) {
	s.events.Add(warning, reason, message)
}

// jitter spreads d by ±10 % so bundles created together do not poll together.
func jitter(d time.Duration) time.Duration { return registry.Spread(d, rand.Float64()) }

// retryDelay is the wait before the poll after the failures-th registry failure in a row, for
// the uniform random u in [0, 1): registry.RetryDelay of the backoff, so the backoff ±10 %, or,
// when the registry answered with a Retry-After, that delay (at most registry.MaxRetryAfter)
// plus up to 10 %: a retry never comes before the time the registry asked for.
func retryDelay(failures int32, err error, u float64) time.Duration {
	return registry.RetryDelay(err, backoff(failures), u)
}

// backoff is the wait after n consecutive failures: 30s, 1m, 2m, 4m, then 8m.
func backoff(n int32) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 5 {
		n = 5
	}
	return 30 * time.Second << (n - 1)
}
