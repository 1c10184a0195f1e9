package catalyst

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/slipway-dev/slipway/internal/registry"
)

// deployFailures remembers, per Environment, the last failed deploy and the registry failures
// in a row, so a failing revision is not redeployed on every event: a stalled failure waits for
// a new revision, a transient one backs off (10s doubling to 5m). A registry that failed is not
// asked again before its retry time either, whatever event comes first: a Retry-After holds. It
// lives in memory: after a restart each failing revision is tried once more.
type deployFailures struct {
	mu       sync.Mutex
	deploys  map[types.NamespacedName]*failedDeploy
	registry map[types.NamespacedName]*registryFailures
}

// registryFailures are an Environment's registry failures in a row: how many, the image asked
// about, when to ask again and the message of the last one.
type registryFailures struct {
	count   int
	image   string
	next    time.Time
	message string
}

type failedDeploy struct {
	revision string
	failure  failure
	attempts int
	next     time.Time
}

// deployBlocked returns the recorded failure of revision when it must not be retried yet, and how
// long to wait (0: not until the revision changes).
func (m *deployFailures) deployBlocked(key types.NamespacedName, revision string, now time.Time) (*failure, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.deploys[key]
	if !ok || d.revision != revision {
		return nil, 0
	}
	f := d.failure
	if f.stalled {
		return &f, 0
	}
	if now.Before(d.next) {
		return &f, d.next.Sub(now)
	}
	return nil, 0
}

// deployFailed records a failed deploy of revision and returns when to retry (0 for a stalled
// failure: not until the revision changes); a transient failure's message gets the retry time.
func (m *deployFailures) deployFailed(key types.NamespacedName, revision string, f *failure, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deploys == nil {
		m.deploys = map[types.NamespacedName]*failedDeploy{}
	}
	d, ok := m.deploys[key]
	if !ok || d.revision != revision {
		d = &failedDeploy{revision: revision}
		m.deploys[key] = d
	}
	d.attempts++
	if f.stalled {
		d.failure = *f
		return 0
	}
	wait := jitter(backoff(d.attempts, retryBase, retryMax))
	d.next = now.Add(wait)
	f.message += fmt.Sprintf(" (retrying at %s)", d.next.UTC().Format(time.RFC3339))
	d.failure = *f
	return wait
}

// registryRetry counts a registry failure asking about image and returns the wait before the
// next try: registry.RetryDelay of the backoff (10s doubling to 5m), so never before the
// registry's Retry-After. message(wait) is the failure's message, kept for registryBlocked.
func (m *deployFailures) registryRetry(key types.NamespacedName, image string, err error, now time.Time, u float64,
	message func(wait time.Duration) string) (time.Duration, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.registry == nil {
		m.registry = map[types.NamespacedName]*registryFailures{}
	}
	f, ok := m.registry[key]
	if !ok || f.image != image {
		f = &registryFailures{image: image}
		m.registry[key] = f
	}
	f.count++
	wait := registry.RetryDelay(err, backoff(f.count, retryBase, retryMax), u)
	f.next, f.message = now.Add(wait), message(wait)
	return wait, f.message
}

// registryBlocked returns the message of the last registry failure asking about image and how
// long until the registry may be asked again, or a zero wait when it may be asked now.
func (m *deployFailures) registryBlocked(key types.NamespacedName, image string, now time.Time) (string, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.registry[key]
	if !ok || f.image != image || !now.Before(f.next) {
		return "", 0
	}
	return f.message, f.next.Sub(now)
}

func (m *deployFailures) forgetRegistry(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.registry, key)
}

func (m *deployFailures) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.deploys, key)
	delete(m.registry, key)
}

// readyTracker remembers which Environments reached Ready once, for the time-to-ready metric.
type readyTracker struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]bool
}

// first reports whether key becomes Ready for the first time in this process.
func (t *readyTracker) first(key types.NamespacedName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[types.NamespacedName]bool{}
	}
	if t.seen[key] {
		return false
	}
	t.seen[key] = true
	return true
}

func (t *readyTracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seen, key)
}
