package registry

import (
	"context"
	"fmt"
)

// Limiter bounds how many registry operations are in flight at once, across every Client that
// shares it. An operation (one ListTags with all its pages and token requests, or one
// ManifestExists) holds one slot from start to end. A nil *Limiter imposes no bound.
type Limiter struct {
	slots chan struct{}
}

// NewLimiter returns a Limiter that allows size operations at once; a size below 1 means 1.
func NewLimiter(size int) *Limiter {
	return &Limiter{slots: make(chan struct{}, max(size, 1))}
}

// Acquire waits for a free slot or for ctx to end, whichever is first. Every successful Acquire
// must be paired with a Release.
func (l *Limiter) Acquire(ctx context.Context) error {
	if l == nil {
		return ctx.Err()
	}
	// Prefer an already-done context over a free slot, so a cancelled caller never starts work.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("registry: waiting for a free operation slot: %w", err)
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("registry: waiting for a free operation slot: %w", ctx.Err())
	}
}

// Release frees the slot taken by Acquire.
func (l *Limiter) Release() {
	if l == nil {
		return
	}
	select {
	case <-l.slots:
	default:
		panic("registry: Limiter.Release without Acquire")
	}
}

// InFlight returns how many slots are taken now.
func (l *Limiter) InFlight() int {
	if l == nil {
		return 0
	}
	return len(l.slots)
}

// Size returns how many operations may run at once, or 0 for a nil Limiter (no bound).
func (l *Limiter) Size() int {
	if l == nil {
		return 0
	}
	return cap(l.slots)
}
