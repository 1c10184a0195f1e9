package testenv

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// CountingClient wraps a client and counts every write it sends (creates, updates, patches,
// server-side applies, deletes, and the same on the status subresource). Tests use it to check
// that a no-op reconcile writes nothing; benchmarks to report writes per object.
type CountingClient struct {
	client.Client
	writes *atomic.Int64
	by     *verbCounts
}

// CountWrites wraps c.
func CountWrites(c client.Client) *CountingClient {
	return &CountingClient{Client: c, writes: &atomic.Int64{}, by: &verbCounts{}}
}

// Writes is the number of writes so far.
func (c *CountingClient) Writes() int64 { return c.writes.Load() }

// ByVerb is the number of writes so far by HTTP verb and kind, e.g. "POST Job",
// "PATCH WerfBundle/status".
func (c *CountingClient) ByVerb() map[string]int64 { return c.by.snapshot() }

// Reset sets the counts back to zero.
func (c *CountingClient) Reset() {
	c.writes.Store(0)
	c.by.reset()
}

// count adds one write of o with verb (on the subresource sub, when set).
func (c *CountingClient) count(verb string, o runtime.Object, sub string) {
	c.writes.Add(1)
	kind := "unknown"
	if o != nil {
		if gvk, err := apiutil.GVKForObject(o, c.Client.Scheme()); err == nil {
			kind = gvk.Kind
		}
	}
	if sub != "" {
		kind += "/" + sub
	}
	c.by.add(verb + " " + kind)
}

type verbCounts struct {
	mu sync.Mutex
	m  map[string]int64
}

func (v *verbCounts) add(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]int64{}
	}
	v.m[key]++
}

func (v *verbCounts) snapshot() map[string]int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.m)
}

func (v *verbCounts) reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.m = nil
}

func (c *CountingClient) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	c.count("POST", o, "")
	return c.Client.Create(ctx, o, opts...)
}

func (c *CountingClient) Update(ctx context.Context, o client.Object, opts ...client.UpdateOption) error {
	c.count("PUT", o, "")
	return c.Client.Update(ctx, o, opts...)
}

func (c *CountingClient) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.PatchOption) error {
	c.count("PATCH", o, "")
	return c.Client.Patch(ctx, o, p, opts...)
}

func (c *CountingClient) Apply(ctx context.Context, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.count("APPLY", nil, "")
	return c.Client.Apply(ctx, o, opts...)
}

func (c *CountingClient) Delete(ctx context.Context, o client.Object, opts ...client.DeleteOption) error {
	c.count("DELETE", o, "")
	return c.Client.Delete(ctx, o, opts...)
}

func (c *CountingClient) DeleteAllOf(ctx context.Context, o client.Object, opts ...client.DeleteAllOfOption) error {
	c.count("DELETECOLLECTION", o, "")
	return c.Client.DeleteAllOf(ctx, o, opts...)
}

func (c *CountingClient) Status() client.SubResourceWriter {
	return &countingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type countingStatus struct {
	client.SubResourceWriter
	c *CountingClient
}

func (c *countingStatus) Create(ctx context.Context, o, sub client.Object, opts ...client.SubResourceCreateOption) error {
	c.c.count("POST", o, "status")
	return c.SubResourceWriter.Create(ctx, o, sub, opts...)
}

func (c *countingStatus) Update(ctx context.Context, o client.Object, opts ...client.SubResourceUpdateOption) error {
	c.c.count("PUT", o, "status")
	return c.SubResourceWriter.Update(ctx, o, opts...)
}

func (c *countingStatus) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	c.c.count("PATCH", o, "status")
	return c.SubResourceWriter.Patch(ctx, o, p, opts...)
}

func (c *countingStatus) Apply(ctx context.Context, o runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	c.c.count("APPLY", nil, "status")
	return c.SubResourceWriter.Apply(ctx, o, opts...)
}

// CountingRecorder counts the Events recorded through it (each one is an API write as well).
type CountingRecorder struct {
	events.EventRecorder
	n atomic.Int64
}

// CountEvents wraps r.
func CountEvents(r events.EventRecorder) *CountingRecorder {
	return &CountingRecorder{EventRecorder: r}
}

// Events is the number of Events so far.
func (r *CountingRecorder) Events() int64 { return r.n.Load() }

func (r *CountingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.n.Add(1)
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
