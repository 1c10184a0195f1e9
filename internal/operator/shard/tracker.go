package shard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tracker follows a ring's membership Leases and says which members are live: those whose Lease
// it has seen renewed within the Lease's duration, judged on this process's clock as leader
// election judges its Lease (clock skew between nodes cannot kill a member). It runs on every
// replica from the process's start, leader or not, so a replica that takes the assigner over
// from a leader that died has already watched the dead leader's membership Lease go unrenewed
// while it waited for the leader-election Lease (the two are renewed alike): it moves the dead
// shard's objects at once, instead of watching its Lease for one more duration from the takeover.
type Tracker struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	// Namespace and Ring select the membership Leases.
	Namespace string
	Ring      string
	// Every is how often the Leases are checked for expiry (1 s when zero).
	Every time.Duration

	mu      sync.Mutex
	reader  client.Reader
	seen    map[string]observed
	live    []string
	started time.Time
	ready   chan struct{}
	once    sync.Once
}

// observed is when the tracker last saw a membership Lease change.
type observed struct {
	version  string
	at       time.Time
	duration time.Duration
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica tracks.
func (t *Tracker) NeedLeaderElection() bool { return false }

func (t *Tracker) init() { t.ready = make(chan struct{}) }

// Start watches the Leases until ctx ends.
func (t *Tracker) Start(ctx context.Context) error {
	t.once.Do(t.init)
	c, err := cache.New(t.Config, cache.Options{
		Scheme:           t.Scheme,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {
				Namespaces: map[string]cache.Config{t.Namespace: {}},
				Label:      labels.SelectorFromSet(labels.Set{RingLabel: t.Ring}),
			},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the shard tracker's cache: %w", err)
	}
	if _, err := c.GetInformer(ctx, &coordinationv1.Lease{}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil
	}
	t.mu.Lock()
	t.reader, t.seen, t.started = c, map[string]observed{}, time.Now()
	t.mu.Unlock()
	t.refresh(ctx)
	close(t.ready)
	wait.UntilWithContext(ctx, t.refresh, period(t.Every))
	return nil
}

// period is every, or 1 s when it is not positive.
func period(every time.Duration) time.Duration {
	if every <= 0 {
		return time.Second
	}
	return every
}

// Wait blocks until the tracker has read the Leases once; false when ctx ended first.
func (t *Tracker) Wait(ctx context.Context) bool {
	t.once.Do(t.init)
	select {
	case <-t.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// Live returns the live members as of the last check, sorted, and how long the tracker has
// watched the Leases: a member first seen less than a Lease duration ago counts as live, so only
// a tracker that has watched that long can tell a member that died before it started.
func (t *Tracker) Live() ([]string, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started.IsZero() {
		return nil, 0
	}
	return slices.Clone(t.live), time.Since(t.started)
}

// refresh recomputes the live members from the cached Leases.
func (t *Tracker) refresh(ctx context.Context) {
	var leases coordinationv1.LeaseList
	if err := t.reader.List(ctx, &leases, client.InNamespace(t.Namespace), client.MatchingLabels{RingLabel: t.Ring}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the membership Leases", "ring", t.Ring)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = t.compute(leases.Items, time.Now())
}

// compute returns the members whose Lease this process has seen renewed within its duration.
func (t *Tracker) compute(leases []coordinationv1.Lease, now time.Time) []string {
	seen := map[string]observed{}
	var out []string
	for _, l := range leases {
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || !l.DeletionTimestamp.IsZero() {
			continue
		}
		o, ok := t.seen[l.Name]
		if !ok || o.version != l.ResourceVersion {
			o = observed{version: l.ResourceVersion, at: now, duration: 15 * time.Second}
			if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
				o.duration = time.Duration(*d) * time.Second
			}
		}
		seen[l.Name] = o
		if now.Sub(o.at) <= o.duration && !slices.Contains(out, *l.Spec.HolderIdentity) {
			out = append(out, *l.Spec.HolderIdentity)
		}
	}
	t.seen = seen
	slices.Sort(out)
	return out
}
