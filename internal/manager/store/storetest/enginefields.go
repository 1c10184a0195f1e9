package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// requireStored fails unless the deployment reads back as want through Get and List.
func requireStored(t *testing.T, b *testBundle, want *store.Deployment, what string) {
	t.Helper()
	got, err := b.store.DeploymentGetByID(b.ctx, want.ID)
	requireOK(t, err, what+": get")
	requireEqual(t, got, want, what+": get")
	list, err := b.store.DeploymentList(b.ctx, &store.DeploymentListParams{OperatorID: want.OperatorID})
	requireOK(t, err, what+": list")
	requireEqual(t, list, []*store.Deployment{want}, what+": list")
}

var engineFieldCases = []testCase{
	{"DeploymentRoundTrip", func(t *testing.T, b *testBundle) {
		at := func(s int) *time.Time { return timePtr(b.now.Add(time.Duration(s) * time.Second)) }
		in := NewDeployment(b.ctx, t, b.store, &DeploymentOpts{Clusters: []string{"green", "other"}, CreatedAt: b.now,
			Strategy: "BlueGreen", Status: store.DeploymentDeploying})
		in.Stage, in.StageStartedAt, in.NextRunAt, in.ClaimedBy, in.LeaseUntil = 2, at(1), at(2), "replica-1", at(3)
		in.CancelRequested, in.RollbackRequested, in.SwitchRequested = true, true, true
		in.RollbackReason, in.RollbackStartedAt, in.RollbackFinishedAt = "3 failed health checks", at(4), at(5)
		in.SwitchedAt, in.BlueDeleteAt, in.BlueDeleted = at(6), at(7), true
		in.TraceContext = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		in.PausedAt, in.PausedBy, in.PauseReason = at(8), "olga", "change freeze"
		in.BakeWindow = 30*time.Minute + 500*time.Millisecond // milliseconds are kept
		c := in.Clusters[0]
		c.Namespace, c.Release, c.BlueNamespace, c.BlueRelease, c.InstallAttempts = "ops-green", "op-green", "ops", "op", 2
		d, err := b.store.DeploymentCreate(b.ctx, in)
		requireOK(t, err, "create")
		want := cloneForTest(in)
		want.OperatorName, want.UpdatedAt = d.OperatorName, b.now
		for _, c := range want.Clusters {
			c.DeploymentID, c.Status, c.Active, c.UpdatedAt = d.ID, store.ClusterPending, true, b.now
		}
		requireEqual(t, d, want, "created with every engine field")
		requireStored(t, b, want, "created")

		// Every field changed by fn is written: set, moved, and back to zero.
		upd := b.now.Add(time.Minute)
		got, err := b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.UpdatedAt = upd
			d.Stage, d.StageStartedAt, d.NextRunAt, d.ClaimedBy, d.LeaseUntil = 3, at(11), nil, "", nil
			d.CancelRequested, d.RollbackRequested, d.SwitchRequested = false, false, false
			d.RollbackReason, d.RollbackStartedAt, d.RollbackFinishedAt = "", nil, at(15)
			d.SwitchedAt, d.BlueDeleteAt, d.BlueDeleted = nil, at(17), false
			d.TraceContext = ""
			d.PausedAt, d.PausedBy, d.PauseReason = nil, "", ""
			d.BakeWindow = 0 // no bake window
			c := d.Clusters[0]
			c.Namespace, c.Release, c.BlueNamespace, c.BlueRelease, c.InstallAttempts = "ops", "op", "", "", 3
			d.Clusters[1].InstallAttempts = 1 // the only change to this cluster: written too
			return nil
		})
		requireOK(t, err, "update")
		want.UpdatedAt, want.Revision = upd, 1
		want.Stage, want.StageStartedAt, want.NextRunAt, want.ClaimedBy, want.LeaseUntil = 3, at(11), nil, "", nil
		want.CancelRequested, want.RollbackRequested, want.SwitchRequested = false, false, false
		want.RollbackReason, want.RollbackStartedAt, want.RollbackFinishedAt = "", nil, at(15)
		want.SwitchedAt, want.BlueDeleteAt, want.BlueDeleted = nil, at(17), false
		want.TraceContext = ""
		want.PausedAt, want.PausedBy, want.PauseReason = nil, "", ""
		want.BakeWindow = 0
		wc := want.Clusters[0]
		wc.Namespace, wc.Release, wc.BlueNamespace, wc.BlueRelease, wc.InstallAttempts, wc.UpdatedAt = "ops", "op", "", "", 3, upd
		want.Clusters[1].InstallAttempts, want.Clusters[1].UpdatedAt = 1, upd
		requireEqual(t, got, want, "updated")
		requireStored(t, b, want, "updated")

		// Zero to set: the other direction.
		upd = upd.Add(time.Minute)
		got, err = b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.UpdatedAt = upd
			d.NextRunAt, d.ClaimedBy, d.LeaseUntil, d.SwitchRequested, d.SwitchedAt = at(20), "replica-2", at(21), true, at(22)
			d.TraceContext = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			d.PausedAt, d.PausedBy, d.PauseReason = at(23), "otto", "night"
			d.BakeWindow = 24 * time.Hour
			return nil
		})
		requireOK(t, err, "update again")
		want.Revision, want.UpdatedAt = 2, upd
		want.NextRunAt, want.ClaimedBy, want.LeaseUntil, want.SwitchRequested, want.SwitchedAt = at(20), "replica-2", at(21), true, at(22)
		want.TraceContext = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		want.PausedAt, want.PausedBy, want.PauseReason = at(23), "otto", "night"
		want.BakeWindow = 24 * time.Hour
		requireEqual(t, got, want, "updated again")
		requireStored(t, b, want, "updated again")
	}},
	{"DeploymentPause", func(t *testing.T, b *testBundle) {
		// A pause is read by every query a replica steps from (a claim included), and a deployment
		// that ends is no longer paused.
		d := Deployment(b.ctx, t, b.store, &DeploymentOpts{Status: store.DeploymentDeploying, NextRunAt: timePtr(b.now)})
		paused := b.now.Add(time.Second)
		got, err := b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.PausedAt, d.PausedBy, d.PauseReason = &paused, "olga", "change freeze"
			d.BakeWindow = 90 * time.Second
			return nil
		})
		requireOK(t, err, "pause")
		requireEqual(t, []any{*got.PausedAt, got.PausedBy, got.PauseReason}, []any{paused, "olga", "change freeze"}, "paused")
		claimed, err := b.store.DeploymentClaim(b.ctx, &store.DeploymentClaimParams{Owner: "r2", Now: b.now.Add(time.Minute), Lease: time.Minute, Limit: 1})
		requireOK(t, err, "claim")
		requireEqual(t, len(claimed), 1, "claimed")
		requireEqual(t, []any{*claimed[0].PausedAt, claimed[0].PausedBy, claimed[0].PauseReason}, []any{paused, "olga", "change freeze"}, "the claim reads the pause")
		requireEqual(t, claimed[0].BakeWindow, 90*time.Second, "the claim reads the bake window")
		got, err = b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.Status = store.DeploymentCancelled
			return nil
		})
		requireOK(t, err, "end")
		requireEqual(t, []any{got.PausedAt, got.PausedBy, got.PauseReason}, []any{(*time.Time)(nil), "", ""}, "ended: not paused")
		requireStored(t, b, got, "ended")
	}},
	{"ApprovalNotified", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, nil)
		var as []*store.Approval
		for i := range 3 {
			as = append(as, Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, CreatedAt: b.now.Add(time.Duration(i) * time.Second)}))
		}
		if as[0].NotifiedAt != nil {
			t.Fatalf("a new approval is notified at %v", as[0].NotifiedAt)
		}
		sent := b.now.Add(time.Minute)
		requireOK(t, b.store.ApprovalMarkNotified(b.ctx, as[1].ID, sent), "mark notified")
		got, err := b.store.ApprovalGetByID(b.ctx, as[1].ID)
		requireOK(t, err, "get")
		want := *as[1]
		want.NotifiedAt = &sent
		requireEqual(t, got, &want, "notified (UpdatedAt unchanged)")

		list, err := b.store.ApprovalList(b.ctx, &store.ApprovalListParams{Unnotified: true})
		requireOK(t, err, "list unnotified")
		requireEqual(t, list, []*store.Approval{as[2], as[0]}, "unnotified, newest first")
		list, err = b.store.ApprovalList(b.ctx, &store.ApprovalListParams{Status: store.ApprovalPending})
		requireOK(t, err, "list pending")
		requireEqual(t, list, []*store.Approval{as[2], &want, as[0]}, "every pending one")

		// Created notified (stored as given).
		created, err := b.store.ApprovalCreate(b.ctx, &store.Approval{DeploymentID: d.ID, Kind: "production",
			RequestedBy: "alice", ExpiresAt: b.now.Add(time.Hour), CreatedAt: b.now, NotifiedAt: &sent})
		requireOK(t, err, "create notified")
		requireEqual(t, created.NotifiedAt, &sent, "created notified")
		got, err = b.store.ApprovalGetByID(b.ctx, created.ID)
		requireOK(t, err, "get")
		requireEqual(t, got, created, "read back")

		// Expiry keeps NotifiedAt.
		expired, err := b.store.ApprovalExpire(b.ctx, b.now.Add(48*time.Hour))
		requireOK(t, err, "expire")
		for _, a := range expired {
			if a.ID == as[1].ID {
				requireEqual(t, a.NotifiedAt, &sent, "notified, expired")
			}
		}
		requireEqual(t, len(expired), 4, "expired")

		requireErr(t, b.store.ApprovalMarkNotified(b.ctx, uuid.NewString(), sent), store.ErrNotFound, "unknown approval")
		requireErr(t, b.store.ApprovalMarkNotified(b.ctx, "nope", sent), store.ErrNotFound, "not a UUID")
	}},
}
