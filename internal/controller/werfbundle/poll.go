package werfbundle

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

const (
	defaultPollInterval = 15 * time.Minute
	// maxRetryAfter caps how long a 429's Retry-After can hold a bundle back.
	maxRetryAfter = time.Hour
)

// pollTracker remembers, in memory, when each bundle polls next. Nothing about polling is written
// to the API server unless the tag list changed, so a no-op poll costs one conditional request and
// no write. After a restart every bundle polls once, with its stored ETag.
type pollTracker struct {
	mu   sync.Mutex
	next map[types.NamespacedName]time.Time
}

func newPollTracker() *pollTracker {
	return &pollTracker{next: map[types.NamespacedName]time.Time{}}
}

// due reports whether the bundle should poll now, and otherwise how long until it should.
func (p *pollTracker) due(key types.NamespacedName, now time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.next[key]
	if !ok || !now.Before(at) {
		return 0, true
	}
	return at.Sub(now), false
}

func (p *pollTracker) schedule(key types.NamespacedName, at time.Time) {
	p.mu.Lock()
	p.next[key] = at
	p.mu.Unlock()
}

// trigger makes the bundle's next poll due now (push webhook, reconcile-now annotation).
func (p *pollTracker) trigger(key types.NamespacedName) {
	p.mu.Lock()
	delete(p.next, key)
	p.mu.Unlock()
}

func (p *pollTracker) forget(key types.NamespacedName) { p.trigger(key) }
