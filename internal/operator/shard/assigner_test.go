package shard_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/operator/shard"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

const (
	ring     = "test"
	label    = "shard.slipway.dev/test"
	leaseNS  = "default"
	duration = 3 * time.Second
)

// member runs one shard's Membership until the returned stop is called (a clean stop: its Lease
// is deleted).
func member(t *testing.T, name string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	m := &shard.Membership{Client: env.Client, Namespace: leaseNS, Ring: ring, Member: name, Duration: duration, Renew: 300 * time.Millisecond}
	go func() { done <- m.Start(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("member %s: %v", name, err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// killedMember writes a member's Lease as a shard would, then never renews it nor deletes it: what
// a SIGKILLed shard leaves behind.
func killedMember(t *testing.T, ctx context.Context, name string) {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: shard.LeaseName(ring, name), Labels: map[string]string{shard.RingLabel: ring}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To(int32(duration.Seconds())), RenewTime: &now},
	}
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), lease) })
}

func startAssigner(t *testing.T, ctx context.Context) *shard.Assigner {
	return startAssignerCtx(t, ctx, nil)
}

// startAssignerCtx starts an assigner until ctx ends or the test does, with tracker (nil: its own).
func startAssignerCtx(t *testing.T, ctx context.Context, tracker *shard.Tracker) *shard.Assigner {
	a := &shard.Assigner{
		Config: env.Config, Scheme: scheme.New(), Client: env.Client,
		GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Label: label,
		Namespace: leaseNS, Ring: ring, Every: 200 * time.Millisecond, Tracker: tracker,
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("assigner: %v", err)
		}
	})
	return a
}

// objects makes n ConfigMaps in each of nss new namespaces; one per namespace is pinned by the
// key label to a key shared by all the namespaces.
func objects(t *testing.T, ctx context.Context, prefix string, nss, n int) {
	for i := range nss {
		ns := fmt.Sprintf("%s-%d", prefix, i)
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		for j := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("obj-%d", j)}}
			if j == 0 {
				cm.Labels = map[string]string{shard.KeyLabel: "pinned"}
			}
			if err := env.Client.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// assignment is every ConfigMap's shard label, by namespace/name.
func assignment(ctx context.Context) (map[string]string, error) {
	var list corev1.ConfigMapList
	if err := env.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.Labels[label]
	}
	return out, nil
}

// settled waits until every ConfigMap is labelled with the member Pick gives it among members,
// and returns the assignment and how long it took.
func settled(t *testing.T, ctx context.Context, members []string) (map[string]string, time.Duration) {
	t.Helper()
	start := time.Now()
	var got map[string]string
	testenv.Eventually(ctx, t, fmt.Sprintf("every object is on its shard among %v", members), func() (bool, error) {
		var list corev1.ConfigMapList
		if err := env.Client.List(ctx, &list); err != nil {
			return false, err
		}
		for _, cm := range list.Items {
			if want := shard.Pick(shard.Key(&cm), members); cm.Labels[label] != want {
				return false, fmt.Errorf("%s/%s is on %q, want %q", cm.Namespace, cm.Name, cm.Labels[label], want)
			}
		}
		var err error
		got, err = assignment(ctx)
		return err == nil, err
	})
	return got, time.Since(start)
}

// TestAssigner_DeathJoinAndLeave runs three shards' membership and the assigner against a real
// API server: every object gets the shard rendezvous hashing gives it (pinned ones by their key);
// a shard killed without a word (its Lease left to expire) loses its objects to the others within
// its Lease duration and only its objects move; a joining shard takes only the objects it wins; a
// shard stopping cleanly hands its objects over at once.
func TestAssigner_DeathJoinAndLeave(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	member(t, "s0")
	stop1 := member(t, "s1")
	killedMember(t, ctx, "s2")
	objects(t, ctx, "shard-a", 12, 5)
	startAssigner(t, ctx)
	before, took := settled(t, ctx, []string{"s0", "s1", "s2"})
	t.Logf("assigned %d objects in %s", len(before), took)
	pinned := ""
	for k, m := range before {
		if k[len(k)-6:] == "/obj-0" {
			if pinned != "" && m != pinned {
				t.Fatalf("pinned objects are on %s and %s, want one shard", pinned, m)
			}
			pinned = m
		}
	}

	// s2 never renews: it is gone a Lease duration after its last renewal.
	after, took := settled(t, ctx, []string{"s0", "s1"})
	t.Logf("moved the killed shard's objects in %s after the assignment (Lease duration %s)", took, duration)
	moved(t, before, after, func(from, _ string) bool { return from == "s2" })

	member(t, "s3")
	joined, took := settled(t, ctx, []string{"s0", "s1", "s3"})
	t.Logf("moved the joining shard's share in %s", took)
	moved(t, after, joined, func(_, to string) bool { return to == "s3" })

	stop1()
	left, took := settled(t, ctx, []string{"s0", "s3"})
	t.Logf("moved a cleanly stopped shard's objects in %s", took)
	moved(t, joined, left, func(from, _ string) bool { return from == "s1" })
}

// moved fails unless every object that changed shard between before and after is one allowed.
func moved(t *testing.T, before, after map[string]string, allowed func(from, to string) bool) {
	t.Helper()
	n := 0
	for k, from := range before {
		if to := after[k]; to != from {
			n++
			if !allowed(from, to) {
				t.Errorf("%s moved from %s to %s, which the membership change does not call for", k, from, to)
			}
		}
	}
	if n == 0 {
		t.Errorf("no object moved")
	}
}

// renewingMember holds a member's Lease as a shard does, renewing it until kill, which leaves it
// behind unrenewed: what a SIGKILLed shard does.
func renewingMember(t *testing.T, ctx context.Context, name string) (kill func()) {
	ctx, cancel := context.WithCancel(ctx)
	killedMember(t, ctx, name)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			lease := &coordinationv1.Lease{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: shard.LeaseName(ring, name)}, lease); err == nil {
				lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
				_ = env.Client.Update(ctx, lease)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// TestAssigner_TakeoverAfterTheLeaderDied is the leader's death: the shard that is also the
// assigner is killed, and another replica takes the assigner over once it has seen the
// leader-election Lease go unrenewed for a duration. That replica's Tracker has run since its
// process started, so it has watched the dead shard's membership Lease go unrenewed as well: the
// first members its new assigner computes leave the dead shard out, and its objects move at once,
// not after one more Lease duration watched from the takeover.
func TestAssigner_TakeoverAfterTheLeaderDied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	member(t, "t0")
	member(t, "t1")
	killLeader := renewingMember(t, ctx, "t2")
	objects(t, ctx, "shard-b", 9, 3)
	// The replica that will take over (t0) tracks the members from its start.
	tracker := &shard.Tracker{Config: env.Config, Scheme: scheme.New(), Namespace: leaseNS, Ring: ring, Every: 100 * time.Millisecond}
	go func() { _ = tracker.Start(ctx) }()
	leaderCtx, leaderDies := context.WithCancel(ctx)
	startAssignerCtx(t, leaderCtx, nil)
	before, _ := settled(t, ctx, []string{"t0", "t1", "t2"})

	killLeader()
	leaderDies()
	testenv.Until(ctx, t, "t0's tracker sees t2's Lease unrenewed for its duration (the leader-election Lease expires alike)", func() bool {
		live, _ := tracker.Live()
		return slices.Equal(live, []string{"t0", "t1"})
	})
	start := time.Now()
	next := startAssignerCtx(t, ctx, tracker)
	testenv.Until(ctx, t, "the new assigner has computed the members", func() bool { return next.Members() != nil })
	if got := next.Members(); !slices.Equal(got, []string{"t0", "t1"}) {
		t.Fatalf("the new assigner's first members are %v, want [t0 t1]: it would wait a Lease duration more for the dead leader", got)
	}
	after, _ := settled(t, ctx, []string{"t0", "t1"})
	t.Logf("the dead leader's objects moved %s after the takeover (Lease duration %s)", time.Since(start), duration)
	moved(t, before, after, func(from, _ string) bool { return from == "t2" })
}
