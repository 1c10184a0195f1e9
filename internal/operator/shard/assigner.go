package shard

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Assigner writes each object's shard into its Label. It runs on one replica (the leader) and
// caches the objects' metadata only, so 50,000 objects cost it a few tens of MiB.
type Assigner struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	// Client writes the labels (a metadata merge patch of the one label).
	Client client.Client
	// GVK is the sharded kind; Label the label naming an object's shard.
	GVK   schema.GroupVersionKind
	Label string
	// Namespace and Ring select the membership Leases.
	Namespace string
	Ring      string
	// Every is how often the members are checked (1 s when zero).
	Every time.Duration
	// Tracker says which members are live. It should run on every replica from the process's
	// start (see Tracker); when nil the assigner starts one of its own with itself.
	Tracker *Tracker
	// Workers patch labels in parallel (4 when zero).
	Workers int
	// Expect, when set, is how many members the assigner waits for at its start, until its
	// Tracker has watched the Leases for Settle, before it assigns anything: shards starting
	// together are not first given everything that the later ones then take back. A takeover on
	// a replica whose Tracker has watched that long already does not wait.
	Expect int
	Settle time.Duration

	mu      sync.Mutex
	members []string
	objects cache.Informer
	reader  client.Reader
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: one assigner writes the labels.
func (a *Assigner) NeedLeaderElection() bool { return true }

// Members returns the live members the assigner last computed, sorted.
func (a *Assigner) Members() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.members)
}

// Start runs the assigner until ctx ends.
func (a *Assigner) Start(ctx context.Context) error {
	if a.Tracker == nil {
		a.Tracker = &Tracker{Config: a.Config, Scheme: a.Scheme, Namespace: a.Namespace, Ring: a.Ring, Every: a.Every}
		go func() { _ = a.Tracker.Start(ctx) }()
	}
	c, err := cache.New(a.Config, cache.Options{Scheme: a.Scheme, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return fmt.Errorf("creating the shard assigner's cache: %w", err)
	}
	a.reader = c
	a.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "shard-assigner-" + a.Ring})
	defer a.queue.ShutDown()
	if a.objects, err = c.GetInformer(ctx, a.meta()); err != nil {
		return err
	}
	enqueue := func(obj any) {
		if m, ok := obj.(client.Object); ok {
			a.queue.Add(client.ObjectKeyFromObject(m))
		}
	}
	if _, err := a.objects.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) || !a.Tracker.Wait(ctx) {
		return nil
	}
	ctrl.LoggerFrom(ctx).WithName("shard").Info("Started the shard assigner", "ring", a.Ring, "kind", a.GVK.Kind)
	if err := a.awaitMembers(ctx); err != nil {
		return nil
	}
	for range max(a.Workers, 4) {
		go a.work(ctx)
	}
	wait.UntilWithContext(ctx, a.Resync, period(a.Every))
	return nil
}

// awaitMembers waits until Expect members are live or the Tracker has watched the Leases for
// Settle; an error only when ctx ended.
func (a *Assigner) awaitMembers(ctx context.Context) error {
	for a.Expect > 1 {
		if live, watched := a.Tracker.Live(); len(live) >= a.Expect || watched >= a.Settle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func (a *Assigner) meta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(a.GVK)
	return m
}

// Resync takes the live members from the Tracker; when they changed it queues every object, and
// it records how many objects each member holds.
func (a *Assigner) Resync(ctx context.Context) {
	live, _ := a.Tracker.Live()
	a.mu.Lock()
	changed := !slices.Equal(live, a.members)
	a.members = live
	a.mu.Unlock()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(a.GVK)
	// Read in place (no copy of every object each tick): only the labels are read.
	if err := a.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the sharded objects", "ring", a.Ring)
		return
	}
	if changed {
		ctrl.LoggerFrom(ctx).WithName("shard").Info("Changed the shard members", "ring", a.Ring, "members", live, "objects", len(list.Items))
		members.WithLabelValues(a.Ring).Set(float64(len(live)))
	}
	count := map[string]int{}
	for i := range list.Items {
		o := &list.Items[i]
		count[o.Labels[a.Label]]++
		if changed {
			a.queue.Add(client.ObjectKeyFromObject(o))
		}
	}
	recordCounts(a.Ring, live, count)
}

func (a *Assigner) work(ctx context.Context) {
	for {
		key, shutdown := a.queue.Get()
		if shutdown {
			return
		}
		if err := a.assign(ctx, key); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to assign an object to a shard", "ring", a.Ring, "object", key)
			a.queue.AddRateLimited(key)
		} else {
			a.queue.Forget(key)
		}
		a.queue.Done(key)
	}
}

// assign labels one object with the member Pick gives it; nothing when it has it already or no
// member is live (objects stay where they are until one is).
func (a *Assigner) assign(ctx context.Context, key types.NamespacedName) error {
	obj := a.meta()
	if err := a.reader.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	to := Pick(Key(obj), a.Members())
	from := obj.Labels[a.Label]
	if to == "" || to == from {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopy())
	lbls := maps.Clone(obj.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[a.Label] = to
	obj.Labels = lbls
	if err := a.Client.Patch(ctx, obj, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	moves.WithLabelValues(a.Ring).Inc()
	return nil
}
