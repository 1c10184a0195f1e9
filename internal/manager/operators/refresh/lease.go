package refresh

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// errBusy: another refresh of the operator holds its lease (the loop skips the operator).
var errBusy = errors.New("another refresh of the operator is in flight")

// errLostLease: the lease could not be renewed; another replica may refresh the operator now.
var errLostLease = errors.New("lost the operator's refresh lease")

// LeaseName is the store lease a refresh of the operator holds.
func LeaseName(operatorID string) string { return "operator-refresh/" + operatorID }

// withLease runs fn while holding op's refresh lease under an owner of its own (so two refreshes
// on one replica exclude each other too), renewing it every third of Config.Lease; fn's context
// ends when a renewal fails. Waiting for a lease held elsewhere lasts up to wait: with wait 0
// the answer is errBusy at once, otherwise an error that is store.ErrConflict.
func (r *Refresher) withLease(ctx context.Context, op *store.Operator, wait time.Duration, fn func(context.Context) error) error {
	name, owner := LeaseName(op.ID), r.cfg.ReplicaID+"/"+rand.Text()[:10]
	if err := r.acquire(ctx, op, name, owner, wait); err != nil {
		return err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	go r.renew(lctx, name, owner, cancel, stop, done)
	err := fn(lctx)
	close(stop)
	<-done
	lost := errors.Is(context.Cause(lctx), errLostLease)
	cancel(nil)
	r.release(ctx, op, name, owner)
	if err != nil && lost {
		return fmt.Errorf("refreshing operator %q: %w: %w", op.Name, errLostLease, err)
	}
	return err
}

func (r *Refresher) acquire(ctx context.Context, op *store.Operator, name, owner string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		now := r.now()
		held, err := r.cfg.Store.LeaseAcquire(ctx, &store.LeaseAcquireParams{Name: name, Owner: owner, Now: now, Until: now.Add(r.cfg.Lease)})
		switch {
		case err != nil:
			// The store may have taken the lease and failed only to answer: a request whose context
			// ends (a replica stopping) still commits on PostgreSQL. The owner is this attempt's
			// alone, so giving it up can only release what the attempt took; kept, it would refuse
			// every refresh of the operator until it lapsed.
			r.release(ctx, op, name, owner)
			return err
		case held:
			return nil
		case wait <= 0:
			return errBusy
		case !time.Now().Before(deadline):
			return fmt.Errorf("operator %q is being refreshed by another request or replica%s; try again: %w", op.Name, r.holder(ctx, name), store.ErrConflict)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// release gives the lease up (under a context of its own: the caller's may have ended).
func (r *Refresher) release(ctx context.Context, op *store.Operator, name, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.cfg.Store.LeaseRelease(rctx, name, owner); err != nil {
		r.log.WarnContext(ctx, "refresh: Releasing the refresh lease failed", "operatorName", op.Name, "err", err)
	}
}

// holder tells who holds the lease name, for a refusal: " (replica R, its lease until T)", or ""
// when that cannot be read (or it was just released).
func (r *Refresher) holder(ctx context.Context, name string) string {
	l, err := r.cfg.Store.LeaseGet(ctx, name)
	if err != nil {
		return ""
	}
	replica, _, _ := strings.Cut(l.Owner, "/")
	return fmt.Sprintf(" (replica %s, its lease until %s)", replica, l.ExpiresAt.UTC().Format(time.RFC3339))
}

// renew keeps the lease every third of it until stop; a failed renewal cancels ctx with
// errLostLease.
func (r *Refresher) renew(ctx context.Context, name, owner string, cancel context.CancelCauseFunc, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := r.now()
		held, err := r.cfg.Store.LeaseAcquire(ctx, &store.LeaseAcquireParams{Name: name, Owner: owner, Now: now, Until: now.Add(r.cfg.Lease)})
		if err != nil || !held {
			cancel(errLostLease)
			return
		}
	}
}
