package werfbundle

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

const defaultPollInterval = 15 * time.Minute

// pollTracker remembers, in memory, when each bundle polls next and under which schedule. Nothing
// about polling is written to the API server unless the tag list changed, so a no-op poll costs
// one conditional request and no write. After a restart every bundle polls once, with its stored
// ETag.
type pollTracker struct {
	mu   sync.Mutex
	next map[types.NamespacedName]scheduledPoll
}

type scheduledPoll struct {
	at time.Time
	// schedule is what the time was computed from (pollSchedule): when it changes, the poll is due.
	schedule string
}

func newPollTracker() *pollTracker {
	return &pollTracker{next: map[types.NamespacedName]scheduledPoll{}}
}

// pollSchedule is everything a poll's time and answer depend on: the registry settings (URL,
// constraint, interval, credentials and CA references, insecure). A change to any of them makes
// the next poll due at once instead of when the old schedule said.
func pollSchedule(b *werfv1.WerfBundle) string {
	r := b.Spec.Registry
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\x00%s\x00%t", r.URL, r.VersionConstraint, r.Insecure)
	if r.PollInterval != nil {
		fmt.Fprintf(&sb, "\x00interval=%s", r.PollInterval.Duration)
	}
	if r.SecretRef != nil {
		fmt.Fprintf(&sb, "\x00secret=%s", r.SecretRef.Name)
	}
	if r.CertSecretRef != nil {
		fmt.Fprintf(&sb, "\x00ca=%s", r.CertSecretRef.Name)
	}
	return sb.String()
}

// due reports whether the bundle should poll now, and otherwise how long until it should. A poll
// is due when none is scheduled, its time has come, or it was scheduled under another schedule.
func (p *pollTracker) due(key types.NamespacedName, schedule string, now time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp, ok := p.next[key]
	if !ok || sp.schedule != schedule || !now.Before(sp.at) {
		return 0, true
	}
	return sp.at.Sub(now), false
}

func (p *pollTracker) schedule(key types.NamespacedName, schedule string, at time.Time) {
	p.mu.Lock()
	p.next[key] = scheduledPoll{at: at, schedule: schedule}
	p.mu.Unlock()
}

// trigger makes the bundle's next poll due now (push webhook, reconcile-now annotation, suspend).
func (p *pollTracker) trigger(key types.NamespacedName) {
	p.mu.Lock()
	delete(p.next, key)
	p.mu.Unlock()
}

func (p *pollTracker) forget(key types.NamespacedName) { p.trigger(key) }
