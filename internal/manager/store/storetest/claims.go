package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// claimLease is the claims' lease in these cases.
const claimLease = 30 * time.Second

// claim claims up to limit deployments for owner at now and returns their ids, in order.
func claim(t *testing.T, b *testBundle, owner string, now time.Time, limit int) []string {
	t.Helper()
	ds, err := b.store.DeploymentClaim(b.ctx, &store.DeploymentClaimParams{Owner: owner, Now: now, Lease: claimLease, Limit: limit})
	requireOK(t, err, "claim for "+owner)
	return deploymentIDs(ds)
}

func deploymentIDs(ds []*store.Deployment) []string {
	return names(ds, func(d *store.Deployment) string { return d.ID })
}

// dueDeployments creates n deployments due one second apart from first, in that order.
func dueDeployments(t *testing.T, b *testBundle, first time.Time, n int) []*store.Deployment {
	t.Helper()
	out := make([]*store.Deployment, n)
	for i := range out {
		out[i] = Deployment(b.ctx, t, b.store, &DeploymentOpts{NextRunAt: timePtr(first.Add(time.Duration(i) * time.Second))})
	}
	return out
}

var claimCases = []testCase{
	{"DueAndUnclaimedOnly", func(t *testing.T, b *testBundle) {
		// Due in reverse creation order: claims go by NextRunAt, not by creation.
		later := Deployment(b.ctx, t, b.store, &DeploymentOpts{Clusters: []string{"a", "b"}, NextRunAt: timePtr(b.now.Add(-time.Second))})
		earlier := Deployment(b.ctx, t, b.store, &DeploymentOpts{NextRunAt: timePtr(b.now.Add(-time.Minute))})
		exactlyNow := Deployment(b.ctx, t, b.store, &DeploymentOpts{NextRunAt: timePtr(b.now)})
		notYet := Deployment(b.ctx, t, b.store, &DeploymentOpts{NextRunAt: timePtr(b.now.Add(time.Microsecond))})
		Deployment(b.ctx, t, b.store, nil) // nothing to do

		got, err := b.store.DeploymentClaim(b.ctx, &store.DeploymentClaimParams{Owner: "r1", Now: b.now, Lease: claimLease, Limit: 10})
		requireOK(t, err, "claim")
		requireEqual(t, deploymentIDs(got), []string{earlier.ID, later.ID, exactlyNow.ID}, "claimed, earliest due first")
		until := b.now.Add(claimLease)
		want := cloneForTest(later)
		want.ClaimedBy, want.LeaseUntil = "r1", &until
		requireEqual(t, got[1], want, "a claimed deployment, with its clusters (Revision and UpdatedAt unchanged)")
		read, err := b.store.DeploymentGetByID(b.ctx, later.ID)
		requireOK(t, err, "get")
		requireEqual(t, read, want, "read back")

		// Live claims hold, the claimer's own included.
		requireEqual(t, claim(t, b, "r2", b.now, 10), []string{}, "claims while the leases run")
		requireEqual(t, claim(t, b, "r1", b.now, 10), []string{}, "the holder claiming again")
		// The leases are still live at their very end; by then the last one is due.
		requireEqual(t, claim(t, b, "r2", until, 10), []string{notYet.ID}, "claims at the leases' end")
	}},
	{"LapsedClaimTakenOver", func(t *testing.T, b *testBundle) {
		ds := dueDeployments(t, b, b.now.Add(-time.Minute), 2)
		requireEqual(t, claim(t, b, "r1", b.now, 10), deploymentIDs(ds), "first claim")

		// r1 renews the first one only; the second lapses and r2 takes it over.
		requireOK(t, b.store.DeploymentRenew(b.ctx, ds[0].ID, "r1", b.now.Add(2*claimLease)), "renew")
		later := b.now.Add(claimLease + time.Second)
		requireEqual(t, claim(t, b, "r2", later, 10), []string{ds[1].ID}, "lapsed claim taken over")
		got, err := b.store.DeploymentGetByID(b.ctx, ds[1].ID)
		requireOK(t, err, "get")
		requireEqual(t, []any{got.ClaimedBy, *got.LeaseUntil}, []any{"r2", later.Add(claimLease)}, "the new claim")

		// r1 finds out when it renews; r2 renews fine; a released claim is free at once.
		err = b.store.DeploymentRenew(b.ctx, ds[1].ID, "r1", later.Add(time.Minute))
		requireErr(t, err, store.ErrConflict, "renewing a claim taken over")
		requireOK(t, b.store.DeploymentRenew(b.ctx, ds[1].ID, "r2", later.Add(time.Hour)), "the new holder renews")
		got, err = b.store.DeploymentGetByID(b.ctx, ds[1].ID)
		requireOK(t, err, "get")
		requireEqual(t, []any{got.ClaimedBy, *got.LeaseUntil, got.Revision}, []any{"r2", later.Add(time.Hour), int64(0)}, "renewed")
		_, err = b.store.DeploymentUpdate(b.ctx, ds[1].ID, func(d *store.Deployment) error {
			d.ClaimedBy, d.LeaseUntil = "", nil
			return nil
		})
		requireOK(t, err, "release the claim")
		requireEqual(t, claim(t, b, "r3", later, 10), []string{ds[1].ID}, "a released claim")

		// A deployment without a claim cannot be renewed; an unknown one is not found.
		free := Deployment(b.ctx, t, b.store, nil)
		requireErr(t, b.store.DeploymentRenew(b.ctx, free.ID, "r1", later), store.ErrConflict, "renewing no claim")
		requireErr(t, b.store.DeploymentRenew(b.ctx, "6f1c1d8e-0000-4000-8000-000000000000", "r1", later), store.ErrNotFound, "unknown id")
		requireErr(t, b.store.DeploymentRenew(b.ctx, "nope", "r1", later), store.ErrNotFound, "not a UUID")
	}},
	{"Limit", func(t *testing.T, b *testBundle) {
		ds := dueDeployments(t, b, b.now.Add(-time.Hour), 5)
		ids := deploymentIDs(ds)
		requireEqual(t, claim(t, b, "r1", b.now, 2), ids[:2], "first two")
		requireEqual(t, claim(t, b, "r2", b.now, 2), ids[2:4], "next two")
		requireEqual(t, claim(t, b, "r3", b.now, 2), ids[4:], "the last one")
		requireEqual(t, claim(t, b, "r4", b.now, 0), []string{}, "a limit of 0")
		_, err := b.store.DeploymentClaim(b.ctx, &store.DeploymentClaimParams{Owner: "", Now: b.now, Lease: claimLease, Limit: 1})
		if err == nil {
			t.Fatal("a claim without an owner: no error")
		}
	}},
	{"ConcurrentClaimersNeverOverlap", func(t *testing.T, b *testBundle) {
		const n = 60
		ds := dueDeployments(t, b, b.now.Add(-time.Hour), n)
		// Every writer claims 3 at a time until nothing is left; each deployment goes to one.
		var mu sync.Mutex
		owners := map[string][]int{}
		errs := parallel(func(i int) error {
			for {
				got, err := b.store.DeploymentClaim(b.ctx, &store.DeploymentClaimParams{
					Owner: string(rune('A' + i)), Now: b.now, Lease: claimLease, Limit: 3})
				if err != nil {
					return err
				}
				if len(got) == 0 {
					return nil
				}
				mu.Lock()
				for _, d := range got {
					owners[d.ID] = append(owners[d.ID], i)
				}
				mu.Unlock()
			}
		})
		for _, err := range errs {
			requireOK(t, err, "claim")
		}
		requireEqual(t, len(owners), n, "deployments claimed")
		for _, d := range ds {
			if len(owners[d.ID]) != 1 {
				t.Fatalf("deployment %s claimed by writers %v, want exactly one", d.ID, owners[d.ID])
			}
			got, err := b.store.DeploymentGetByID(b.ctx, d.ID)
			requireOK(t, err, "get")
			requireEqual(t, got.ClaimedBy, string(rune('A'+owners[d.ID][0])), "the stored claim is its claimer's")
		}
		requireEqual(t, claim(t, b, "late", b.now, n), []string{}, "left to claim")
		// Once every lease lapsed, all are claimable again, in due order.
		ids := deploymentIDs(ds)
		requireEqual(t, claim(t, b, "late", b.now.Add(claimLease+time.Second), n), ids, "after the leases lapsed")
	}},
}
