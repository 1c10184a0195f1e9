package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// acquire tries to take lease name for owner at now for ten seconds.
func acquire(t *testing.T, b *testBundle, name, owner string, now time.Time) bool {
	t.Helper()
	ok, err := b.store.LeaseAcquire(b.ctx, &store.LeaseAcquireParams{Name: name, Owner: owner, Now: now, Until: now.Add(10 * time.Second)})
	requireOK(t, err, "acquire "+name+" for "+owner)
	return ok
}

var leaseCases = []testCase{
	{"TakeRenewLapseRelease", func(t *testing.T, b *testBundle) {
		at := func(s int) time.Time { return b.now.Add(time.Duration(s) * time.Second) }
		requireEqual(t, acquire(t, b, "admission", "r1", at(0)), true, "a free lease")
		requireEqual(t, acquire(t, b, "mail", "r2", at(0)), true, "another name is another lease")
		requireEqual(t, acquire(t, b, "admission", "r2", at(5)), false, "held by r1")
		requireEqual(t, acquire(t, b, "admission", "r1", at(5)), true, "r1 renews (until 15s)")
		requireEqual(t, acquire(t, b, "admission", "r2", at(12)), false, "renewed, still r1's")
		requireEqual(t, acquire(t, b, "admission", "r2", at(15)), false, "live at its very end")
		requireEqual(t, acquire(t, b, "admission", "r2", at(16)), true, "lapsed: r2 takes it over (until 26s)")
		requireEqual(t, acquire(t, b, "admission", "r1", at(17)), false, "r1 lost it")

		l, err := b.store.LeaseGet(b.ctx, "admission")
		requireOK(t, err, "read the lease")
		requireEqual(t, l.Owner, "r2", "the holder read")
		requireEqual(t, l.ExpiresAt.Equal(at(26)), true, fmt.Sprintf("its end %s, want %s", l.ExpiresAt, at(26)))

		requireOK(t, b.store.LeaseRelease(b.ctx, "admission", "r1"), "release by a non-owner")
		requireEqual(t, acquire(t, b, "admission", "r1", at(18)), false, "a non-owner's release is a no-op")
		requireOK(t, b.store.LeaseRelease(b.ctx, "admission", "r2"), "release by the owner")
		requireEqual(t, acquire(t, b, "admission", "r1", at(18)), true, "released: free at once")
		requireOK(t, b.store.LeaseRelease(b.ctx, "unknown", "r1"), "release of a lease nobody holds")
		requireOK(t, b.store.LeaseRelease(b.ctx, "admission", "r1"), "release by the owner")
		if _, err := b.store.LeaseGet(b.ctx, "admission"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("reading a released lease: %v, want ErrNotFound", err)
		}

		for name, p := range map[string]store.LeaseAcquireParams{
			"no name":  {Owner: "r1", Now: at(0), Until: at(1)},
			"no owner": {Name: "x", Now: at(0), Until: at(1)},
			"no time":  {Name: "x", Owner: "r1", Now: at(1), Until: at(1)},
		} {
			if _, err := b.store.LeaseAcquire(b.ctx, &p); err == nil {
				t.Errorf("acquire with %s: no error", name)
			}
		}
	}},
	{"ConcurrentAcquirersOneWinner", func(t *testing.T, b *testBundle) {
		won := make([]bool, writers)
		errs := parallel(func(i int) error {
			var err error
			won[i], err = b.store.LeaseAcquire(b.ctx, &store.LeaseAcquireParams{Name: "leader", Owner: fmt.Sprint("r", i),
				Now: b.now, Until: b.now.Add(time.Minute)})
			return err
		})
		n := 0
		for i, err := range errs {
			requireOK(t, err, "acquire")
			if won[i] {
				n++
			}
		}
		requireEqual(t, n, 1, "holders")
	}},
}
