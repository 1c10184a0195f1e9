package catalyst

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// deployFailures remembers, per Environment, the last failed deploy and the registry failures
// in a row, so a failing revision is not redeployed on every event: a stalled failure waits for
// a new revision, a transient one backs off (10s doubling to 5m). It lives in memory: after a
// restart each failing revision is tried once more.
type deployFailures struct {
	mu       sync.Mutex
	deploys  map[types.NamespacedName]*failedDeploy
	registry map[types.NamespacedName]int
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

// registryRetry counts a registry failure and returns the wait before the next try.
func (m *deployFailures) registryRetry(key types.NamespacedName) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.registry == nil {
		m.registry = map[types.NamespacedName]int{}
	}
	m.registry[key]++
	return backoff(m.registry[key], retryBase, retryMax)
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
