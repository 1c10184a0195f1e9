package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const clusters = "POST /api/v1/clusters"

func mustAllow(t *testing.T, l *Limiter, user, label string, n int) {
	t.Helper()
	for i := range n {
		if ok, retry := l.Allow(user, label); !ok {
			t.Fatalf("%s %s request %d of %d refused (retry in %s)", user, label, i+1, n, retry)
		}
	}
}

func mustRefuse(t *testing.T, l *Limiter, user, label string, retry time.Duration) {
	t.Helper()
	ok, got := l.Allow(user, label)
	if ok {
		t.Fatalf("%s %s allowed, want refused", user, label)
	}
	if got != retry {
		t.Fatalf("%s %s retry after %s, want %s", user, label, got, retry)
	}
}

func TestBurstThenRefill(t *testing.T) {
	c := newClock()
	l := New(DefaultRules(), c.now)

	// 5/min: all five at once, then one every 12 s.
	mustAllow(t, l, "alice", clusters, 5)
	mustRefuse(t, l, "alice", clusters, 12*time.Second)
	c.advance(5 * time.Second)
	mustRefuse(t, l, "alice", clusters, 7*time.Second)
	c.advance(7 * time.Second)
	mustAllow(t, l, "alice", clusters, 1)
	mustRefuse(t, l, "alice", clusters, 12*time.Second)

	// Refused requests spend nothing: a user hammering while limited gets in on time.
	for range 50 {
		l.Allow("alice", clusters)
	}
	c.advance(12 * time.Second)
	mustAllow(t, l, "alice", clusters, 1)

	// Each user and each route has its own bucket; an unlimited route is always allowed.
	mustAllow(t, l, "bob", clusters, 5)
	mustAllow(t, l, "alice", "GET /api/v1/clusters", 60)
	mustRefuse(t, l, "alice", "GET /api/v1/clusters", time.Second)
	mustAllow(t, l, "alice", "GET /api/v1/clusters/{name}", 1000)
	mustAllow(t, l, "alice", "DELETE /api/v1/clusters/{name}", 1000)
}

func TestRetryAfterRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		want time.Duration
	}{
		{Rule{Events: 60, Per: time.Minute}, time.Second},     // exactly 1 s
		{Rule{Events: 7, Per: time.Minute}, 9 * time.Second},  // 8.57 s
		{Rule{Events: 3, Per: time.Second}, time.Second},      // 333 ms, never below 1 s
		{Rule{Events: 2, Per: time.Hour}, 30 * time.Minute},   // 1800 s
		{Rule{Events: 10, Per: time.Minute}, 6 * time.Second}, // deployments
	} {
		t.Run(fmt.Sprintf("%d per %s", tc.rule.Events, tc.rule.Per), func(t *testing.T) {
			c := newClock()
			l := New(map[string]Rule{"POST /x": tc.rule}, c.now)
			mustAllow(t, l, "u", "POST /x", tc.rule.Events)
			mustRefuse(t, l, "u", "POST /x", tc.want)
		})
	}
}

func TestLabelsNormalized(t *testing.T) {
	c := newClock()
	l := New(map[string]Rule{"post  /api/v1/clusters": {Events: 1, Per: time.Minute}}, c.now)
	mustAllow(t, l, "u", clusters, 1)
	mustRefuse(t, l, "u", "post /api/v1/clusters", time.Minute)
	if _, ok := l.Rules()[clusters]; !ok {
		t.Fatalf("rules = %v", l.Rules())
	}
}

func TestInvalidRulesDropped(t *testing.T) {
	l := New(map[string]Rule{"GET /a": {Events: 0, Per: time.Minute}, "GET /b": {Events: 1}}, nil)
	if len(l.Rules()) != 0 {
		t.Fatalf("rules = %v", l.Rules())
	}
	mustAllow(t, l, "u", "GET /a", 100)
}

func TestIdleBucketsEvicted(t *testing.T) {
	c := newClock()
	l := New(DefaultRules(), c.now)
	for i := range 10000 {
		mustAllow(t, l, fmt.Sprintf("user-%d", i), clusters, 1)
	}
	if l.Len() != 10000 {
		t.Fatalf("%d buckets, want 10000", l.Len())
	}
	c.advance(61 * time.Second)
	mustAllow(t, l, "late", clusters, 1)
	if n := l.Len(); n != 1 {
		t.Fatalf("%d buckets after the others idled a full minute, want 1", n)
	}
}

func TestEvictionNeverRefillsEarly(t *testing.T) {
	c := newClock()
	l := New(DefaultRules(), c.now)
	c.advance(30 * time.Second)
	mustAllow(t, l, "heavy", clusters, 5)
	c.advance(30 * time.Second)
	mustAllow(t, l, "other", clusters, 1) // a sweep runs now; "heavy" has idled only 30 s
	if n := l.Len(); n != 2 {
		t.Fatalf("%d buckets, want heavy's kept beside other's", n)
	}
	// 30 s at 5/min refilled 2.5 tokens.
	mustAllow(t, l, "heavy", clusters, 2)
	mustRefuse(t, l, "heavy", clusters, 6*time.Second)
}

func TestConcurrentUsersGetExactlyTheirAllowance(t *testing.T) {
	c := newClock()
	l := New(DefaultRules(), c.now)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if ok, _ := l.Allow("alice", "POST /api/v1/deployments"); ok {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got != 10 {
		t.Fatalf("%d of 400 concurrent requests allowed, want the burst of 10", got)
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(DefaultRules(), nil)
	users := make([]string, 1000)
	for i := range users {
		users[i] = fmt.Sprintf("user-%d", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(users[i%len(users)], "GET /api/v1/operators")
			i++
		}
	})
}
