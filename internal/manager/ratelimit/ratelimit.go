// Package ratelimit limits each user's requests per route with token buckets
// (golang.org/x/time/rate), one bucket per (user, rule label).
//
// A rule label is "METHOD /path-pattern", the route's pattern as the server's mux spells it
// ("POST /api/v1/clusters"). A rule of N events per period is a bucket of N tokens refilled at
// N/period: a user may spend a full period's allowance at once (burst = N), then one request
// every period/N.
//
// Limits are per replica: buckets live in memory, so with R replicas behind a load balancer a user
// may get up to R times the allowance. Buckets idle long enough to have refilled completely are
// dropped, which loses nothing (a new bucket starts full) and keeps memory to the users active in
// the last period.
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rule allows Events requests per Per, all of them at once if saved up.
type Rule struct {
	Events int
	Per    time.Duration
}

func (r Rule) limit() rate.Limit { return rate.Limit(float64(r.Events) / r.Per.Seconds()) }

// DefaultRules are the design's limits.
func DefaultRules() map[string]Rule {
	return map[string]Rule{
		"POST /api/v1/deployments": {Events: 10, Per: time.Minute},
		"GET /api/v1/operators":    {Events: 60, Per: time.Minute},
		"GET /api/v1/clusters":     {Events: 60, Per: time.Minute},
		"POST /api/v1/clusters":    {Events: 5, Per: time.Minute},
	}
}

type key struct{ user, label string }

type bucket struct {
	lim      *rate.Limiter
	lastSeen time.Time
	idleTTL  time.Duration
}

// Limiter holds the buckets. It is safe for concurrent use.
type Limiter struct {
	rules map[string]Rule
	now   func() time.Time

	mu         sync.Mutex
	buckets    map[key]*bucket
	lastSweep  time.Time
	sweepEvery time.Duration
}

// New returns a limiter for rules (label -> rule); now is the clock (nil: time.Now). Rules with
// Events or Per not positive are dropped: their label is unlimited. Use ParseRules to get errors.
func New(rules map[string]Rule, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{rules: map[string]Rule{}, now: now, buckets: map[key]*bucket{}, sweepEvery: time.Minute}
	for label, r := range rules {
		if r.Events <= 0 || r.Per <= 0 {
			continue
		}
		l.rules[normalizeLabel(label)] = r
		if r.Per < l.sweepEvery {
			l.sweepEvery = max(r.Per, time.Second)
		}
	}
	l.lastSweep = now()
	return l
}

// Rules returns a copy of the rules in force.
func (l *Limiter) Rules() map[string]Rule {
	out := make(map[string]Rule, len(l.rules))
	for k, v := range l.rules {
		out[k] = v
	}
	return out
}

// Allow spends one token of user's bucket for label. When the bucket is empty it returns false and
// how long until a token is back, rounded up to whole seconds (at least 1 s) for a Retry-After
// header. A label without a rule is always allowed.
func (l *Limiter) Allow(user, label string) (ok bool, retryAfter time.Duration) {
	rule, limited := l.rules[label]
	if !limited {
		label = normalizeLabel(label)
		if rule, limited = l.rules[label]; !limited {
			return true, 0
		}
	}
	now := l.now()

	l.mu.Lock()
	if now.Sub(l.lastSweep) >= l.sweepEvery {
		l.sweepLocked(now)
	}
	k := key{user, label}
	b := l.buckets[k]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(rule.limit(), rule.Events), idleTTL: rule.Per}
		l.buckets[k] = b
	}
	if now.After(b.lastSeen) {
		b.lastSeen = now
	}
	l.mu.Unlock()

	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	delay := r.DelayFrom(now)
	if delay == 0 {
		return true, 0
	}
	r.CancelAt(now)
	return false, ceilSecond(delay)
}

// sweepLocked drops buckets idle for a full period: refilled, they equal a new bucket.
func (l *Limiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.lastSeen) >= b.idleTTL {
			delete(l.buckets, k)
		}
	}
	l.lastSweep = now
}

// Len is the number of buckets held, for tests and metrics.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func ceilSecond(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second
	if s < 1 {
		s = 1
	}
	return s * time.Second
}
