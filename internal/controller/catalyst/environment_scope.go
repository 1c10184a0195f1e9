package catalyst

import (
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/notes"
	"github.com/slipway-dev/slipway/internal/registry"
)

// envScope carries one reconcile's facts from the steps to computeStatus.
type envScope struct {
	env *catalystv1alpha1.Environment
	now time.Time

	// project resolution
	project     *catalystv1alpha1.Project
	projectRead bool
	team        string

	// namespace
	nsName    string
	namespace *corev1.Namespace
	nsReady   bool
	nsMessage string
	// limits describes the LimitRange's container defaults, "" without one.
	limits string

	// build
	image string // <repository>:<commit>, "" without a registry
	build *outcome
	// buildJob is the Job building (or that built) image, when one was needed.
	buildJob *catalystv1alpha1.JobReference

	// deploy
	revision string
	deployed bool // revision is deployed (now or before)
	// freshDeploy: the deploy happened in this reconcile.
	freshDeploy bool
	// envContainers: how many containers the fresh deploy gave the environment's variables.
	envContainers int32
	inventory     []inventoryEntry
	host          string
	ingress       bool
	ready         *outcome // the deployed objects' readiness

	// expiresAt is the TTL's deadline, nil for none.
	expiresAt *time.Time
	ttlKnown  bool

	// failure is what stops the environment, for status.
	failure *failure
	// err is an unexpected error (API server, network) returned to the controller: the status
	// is left as it was and the reconcile is retried with backoff.
	err error

	deleting   bool
	deleteNote string
	expired    bool
	reconciled bool

	// next is when to come back (zero: only on events and the resync).
	next time.Duration

	events notes.Notes
}

// outcome is one condition's verdict from a step.
type outcome struct {
	ok      bool
	reason  string
	message string
}

// failure says why the environment cannot make progress: the condition it belongs to, its
// reason and message, the phase it puts the environment in, and whether a human must act.
type failure struct {
	condition string
	reason    string
	message   string
	phase     catalystv1alpha1.Phase
	stalled   bool
}

func newEnvScope(env *catalystv1alpha1.Environment, now time.Time) *envScope {
	return &envScope{env: env, now: now}
}

// requeue asks to come back after d, keeping the earliest request.
func (s *envScope) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if s.next == 0 || d < s.next {
		s.next = d
	}
}

func (s *envScope) fail(f *failure) {
	if s.failure == nil {
		s.failure = f
	}
}

func (s *envScope) eventf(warning bool, reason, message string) {
	s.events.Add(warning, reason, message)
}

// result is the reconcile's Result: the earliest requeue asked for, the TTL's expiry, or the
// resync period.
func (s *envScope) result(resync time.Duration) ctrl.Result {
	next := s.next
	if s.deleting {
		return ctrl.Result{RequeueAfter: next}
	}
	if s.expiresAt != nil {
		if d := s.expiresAt.Sub(s.now); d > 0 && (next == 0 || d < next) {
			next = d + time.Second
		}
	}
	if resync > 0 && (next == 0 || resync < next) {
		next = jitter(resync)
	}
	return ctrl.Result{RequeueAfter: next}
}

// jitter spreads d by ±10 % so objects created together do not come back together.
func jitter(d time.Duration) time.Duration { return registry.Spread(d, rand.Float64()) }

// backoff is the wait after n failures in a row: base, doubling, at most max.
func backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
