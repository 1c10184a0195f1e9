package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// LeaseAcquire takes the named lease for p.Owner until p.Until, in one upsert: when nobody holds
// it, when it expired before p.Now, or when p.Owner already does (a renewal). It reports whether
// p.Owner holds it afterwards; concurrent acquirers of a free lease get one winner.
func (e *executor) LeaseAcquire(ctx context.Context, p *store.LeaseAcquireParams) (bool, error) {
	switch {
	case p.Name == "" || p.Owner == "":
		return false, fmt.Errorf("acquire lease %q for %q: empty name or owner", p.Name, p.Owner)
	case !p.Until.After(p.Now):
		return false, fmt.Errorf("acquire lease %s for %s: until %s is not after now %s", p.Name, p.Owner, p.Until, p.Now)
	}
	var owner string
	err := e.w.QueryRowContext(ctx, e.q("LeaseAcquire"), p.Name, p.Owner, e.ts(p.Now), e.ts(p.Until)).Scan(&owner)
	if err != nil {
		if err = e.mapErr(err); errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("acquire lease %s for %s: %w", p.Name, p.Owner, err)
	}
	return owner == p.Owner, nil
}

// LeaseRelease gives the named lease up if owner holds it; otherwise it does nothing.
func (e *executor) LeaseRelease(ctx context.Context, name, owner string) error {
	if _, err := e.w.ExecContext(ctx, e.q("LeaseRelease"), name, owner); err != nil {
		return fmt.Errorf("release lease %s of %s: %w", name, owner, e.mapErr(err))
	}
	return nil
}

// LeaseGet reads who holds the named lease and until when; ErrNotFound when nobody does.
func (e *executor) LeaseGet(ctx context.Context, name string) (*store.Lease, error) {
	var l store.Lease
	err := e.w.QueryRowContext(ctx, e.q("LeaseGet"), name).Scan(&l.Name, &l.Owner, timeDest{&l.ExpiresAt})
	if err != nil {
		return nil, fmt.Errorf("read lease %s: %w", name, e.mapErr(err))
	}
	return &l, nil
}
