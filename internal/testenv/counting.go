package testenv

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CountingClient wraps a client and counts every write it sends (creates, updates, patches,
// server-side applies, deletes, and the same on the status subresource). Tests use it to check
// that a no-op reconcile writes nothing; benchmarks to report writes per object.
type CountingClient struct {
	client.Client
	writes *atomic.Int64
}

// CountWrites wraps c.
func CountWrites(c client.Client) *CountingClient {
	return &CountingClient{Client: c, writes: &atomic.Int64{}}
}

// Writes is the number of writes so far.
func (c *CountingClient) Writes() int64 { return c.writes.Load() }

// Reset sets the count back to zero.
func (c *CountingClient) Reset() { c.writes.Store(0) }

func (c *CountingClient) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	c.writes.Add(1)
	return c.Client.Create(ctx, o, opts...)
}

func (c *CountingClient) Update(ctx context.Context, o client.Object, opts ...client.UpdateOption) error {
	c.writes.Add(1)
	return c.Client.Update(ctx, o, opts...)
}

func (c *CountingClient) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.PatchOption) error {
	c.writes.Add(1)
	return c.Client.Patch(ctx, o, p, opts...)
}

func (c *CountingClient) Apply(ctx context.Context, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.writes.Add(1)
	return c.Client.Apply(ctx, o, opts...)
}

func (c *CountingClient) Delete(ctx context.Context, o client.Object, opts ...client.DeleteOption) error {
	c.writes.Add(1)
	return c.Client.Delete(ctx, o, opts...)
}

func (c *CountingClient) DeleteAllOf(ctx context.Context, o client.Object, opts ...client.DeleteAllOfOption) error {
	c.writes.Add(1)
	return c.Client.DeleteAllOf(ctx, o, opts...)
}

func (c *CountingClient) Status() client.SubResourceWriter {
	return &countingStatus{SubResourceWriter: c.Client.Status(), writes: c.writes}
}

type countingStatus struct {
	client.SubResourceWriter
	writes *atomic.Int64
}

func (c *countingStatus) Create(ctx context.Context, o, sub client.Object, opts ...client.SubResourceCreateOption) error {
	c.writes.Add(1)
	return c.SubResourceWriter.Create(ctx, o, sub, opts...)
}

func (c *countingStatus) Update(ctx context.Context, o client.Object, opts ...client.SubResourceUpdateOption) error {
	c.writes.Add(1)
	return c.SubResourceWriter.Update(ctx, o, opts...)
}

func (c *countingStatus) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	c.writes.Add(1)
	return c.SubResourceWriter.Patch(ctx, o, p, opts...)
}

func (c *countingStatus) Apply(ctx context.Context, o runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	c.writes.Add(1)
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
