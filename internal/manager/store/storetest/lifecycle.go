package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// versions upserts versions of op and returns them as stored.
func versions(t *testing.T, b *testBundle, op *store.Operator, vs ...string) {
	t.Helper()
	for _, v := range vs {
		_, err := b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{
			OperatorID: op.ID, Version: v, Digest: "sha256:" + v, Now: b.now})
		requireOK(t, err, "upsert "+v)
	}
}

// removedOf lists op's versions as "version:reason" ("version:" when available), newest first.
func removedOf(t *testing.T, b *testBundle, op *store.Operator) []string {
	t.Helper()
	vs, err := b.store.OperatorVersionList(b.ctx, op.ID)
	requireOK(t, err, "list versions")
	return names(vs, func(v *store.OperatorVersion) string { return v.Version + ":" + v.RemovedReason })
}

func dueNames(t *testing.T, b *testBundle, now time.Time, limit int) []string {
	t.Helper()
	ops, err := b.store.OperatorRefreshDue(b.ctx, &store.OperatorRefreshDueParams{Now: now, Limit: limit})
	requireOK(t, err, "due")
	return names(ops, func(o *store.Operator) string { return o.Name })
}

func recordRefresh(t *testing.T, b *testBundle, op *store.Operator, at, next time.Time, ok bool, etag, errText string) *store.OperatorRefresh {
	t.Helper()
	r, err := b.store.OperatorRefreshRecord(b.ctx, &store.OperatorRefreshRecordParams{
		OperatorID: op.ID, Source: op.ChartRepository + " " + op.ChartName, ETag: etag, LastModified: "lm-" + etag,
		CheckedAt: at, Succeeded: ok, NextAt: next, Error: errText})
	requireOK(t, err, "record refresh")
	return r
}

var lifecycleCases = []testCase{
	{"UpdateReplacesSourceAndFilter", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "moving"})
		later := b.now.Add(time.Hour)
		got, err := b.store.OperatorUpdate(b.ctx, &store.OperatorUpdateParams{ID: op.ID,
			ChartRepository: "https://charts.example/stable", ChartName: "moved", VersionFilter: ">=2", Now: later})
		requireOK(t, err, "update")
		want := *op
		want.ChartRepository, want.ChartName, want.VersionFilter, want.UpdatedAt = "https://charts.example/stable", "moved", ">=2", later
		requireEqual(t, got, &want, "updated")
		read, err := b.store.OperatorGetByName(b.ctx, "moving")
		requireOK(t, err, "get")
		requireEqual(t, read, &want, "read back")
		_, err = b.store.OperatorUpdate(b.ctx, &store.OperatorUpdateParams{ID: uuid.NewString(), ChartRepository: "x", ChartName: "y", Now: later})
		requireErr(t, err, store.ErrNotFound, "unknown id")
		_, err = b.store.OperatorUpdate(b.ctx, &store.OperatorUpdateParams{ID: "nope", ChartRepository: "x", ChartName: "y", Now: later})
		requireErr(t, err, store.ErrNotFound, "malformed id")
	}},
	{"DeletedKeepsHistory", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "gone"})
		other := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "stays"})
		versions(t, b, op, "1.0.0", "1.1.0")
		_, err := b.store.CRDSchemaInsert(b.ctx, crdRevision("widgets.example.com", "example.com", op.ID, "1.0.0", "sha256:w1"))
		requireOK(t, err, "CRD revision")
		d := rollout(t, b, op, "1.0.0", b.now.Add(-time.Hour), store.DeploymentCompleted, 1,
			map[string]store.ClusterStatus{"c1": store.ClusterHealthy}, "c1")
		rollout(t, b, other, "1.0.0", b.now.Add(-time.Hour), store.DeploymentCompleted, 1,
			map[string]store.ClusterStatus{"c1": store.ClusterHealthy}, "c1")

		at := b.now.Add(time.Minute)
		del, err := b.store.OperatorMarkDeleted(b.ctx, &store.OperatorMarkDeletedParams{ID: op.ID, Now: at})
		requireOK(t, err, "delete")
		if del.DeletedAt == nil || !del.DeletedAt.Equal(at) || !del.UpdatedAt.Equal(at) {
			t.Fatalf("deleted: deletedAt %v updatedAt %v, want both %v", del.DeletedAt, del.UpdatedAt, at)
		}
		_, err = b.store.OperatorMarkDeleted(b.ctx, &store.OperatorMarkDeletedParams{ID: op.ID, Now: at})
		requireErr(t, err, store.ErrNotFound, "deleting twice")
		// Read by name and id: the row and its history are still there.
		byName, err := b.store.OperatorGetByName(b.ctx, "gone")
		requireOK(t, err, "get by name")
		requireEqual(t, byName, del, "get by name")
		byID, err := b.store.OperatorGetByID(b.ctx, op.ID)
		requireOK(t, err, "get by id")
		requireEqual(t, byID, del, "get by id")
		requireEqual(t, removedOf(t, b, op), []string{"1.1.0:", "1.0.0:"}, "versions")
		revs, err := b.store.CRDSchemaList(b.ctx, &store.CRDSchemaListParams{Name: "widgets.example.com"})
		requireOK(t, err, "CRD revisions")
		if len(revs) != 1 || revs[0].OperatorID != op.ID {
			t.Fatalf("CRD revisions after delete: %+v", revs)
		}
		kept, err := b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "deployment")
		if kept.OperatorName != "gone" || kept.Version != "1.0.0" {
			t.Fatalf("deployment after delete: %s %s", kept.OperatorName, kept.Version)
		}
		// Gone from lists, counts, the refresh loop and the health loop's live releases.
		list, err := b.store.OperatorList(b.ctx, &store.OperatorListParams{})
		requireOK(t, err, "list")
		requireEqual(t, names(list, func(o *store.Operator) string { return o.Name }), []string{"stays"}, "list")
		n, err := b.store.OperatorCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, 1, "count")
		requireEqual(t, dueNames(t, b, b.now, 10), []string{"stays"}, "due")
		lives, err := b.store.LiveReleaseList(b.ctx, &store.LiveReleaseListParams{})
		requireOK(t, err, "live releases")
		requireEqual(t, names(lives, func(l *store.LiveRelease) string { return l.OperatorName }), []string{"stays"}, "live releases")
		_, err = b.store.OperatorMarkDeleted(b.ctx, &store.OperatorMarkDeletedParams{ID: uuid.NewString(), Now: at})
		requireErr(t, err, store.ErrNotFound, "unknown id")
	}},
	{"VersionRemovedAndRestored", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, nil)
		other := Operator(b.ctx, t, b.store, nil)
		versions(t, b, op, "1.0.0", "1.1.0", "2.0.0")
		versions(t, b, other, "1.0.0")
		t1, t2 := b.now.Add(time.Minute), b.now.Add(2*time.Minute)
		set := func(v string, at *time.Time, reason string) *store.OperatorVersion {
			t.Helper()
			got, err := b.store.OperatorVersionSetRemoved(b.ctx, &store.OperatorVersionSetRemovedParams{
				OperatorID: op.ID, Version: v, RemovedAt: at, Reason: reason})
			requireOK(t, err, "set removed "+v)
			return got
		}
		got := set("1.0.0", &t1, store.VersionRemovedFromSource)
		want := &store.OperatorVersion{OperatorID: op.ID, Version: "1.0.0", Digest: "sha256:1.0.0", CreatedAt: b.now,
			RemovedAt: &t1, RemovedReason: store.VersionRemovedFromSource}
		requireEqual(t, got, want, "removed")
		// Removed again for another reason: the first time stays.
		got = set("1.0.0", &t2, store.VersionRemovedByFilter)
		want.RemovedReason = store.VersionRemovedByFilter
		requireEqual(t, got, want, "removed again")
		set("2.0.0", &t2, store.VersionRemovedFromSource)
		requireEqual(t, removedOf(t, b, op), []string{"2.0.0:source", "1.1.0:", "1.0.0:filter"}, "list")
		many, err := b.store.OperatorVersionListMany(b.ctx, []string{op.ID, other.ID})
		requireOK(t, err, "list many")
		requireEqual(t, names(many[op.ID], func(v *store.OperatorVersion) string { return v.Version + ":" + v.RemovedReason }),
			[]string{"2.0.0:source", "1.1.0:", "1.0.0:filter"}, "list many")
		if many[other.ID][0].RemovedAt != nil {
			t.Fatalf("the other operator's 1.0.0 is marked: %+v", many[other.ID][0])
		}
		// An upsert (a refresh storing the version again) leaves the mark to SetRemoved.
		up, err := b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: "2.0.0", Digest: "sha256:new", Now: t2})
		requireOK(t, err, "upsert")
		if up.RemovedAt == nil || up.Digest != "sha256:new" {
			t.Fatalf("upsert of a removed version: %+v", up)
		}
		back := set("2.0.0", nil, "ignored")
		if back.RemovedAt != nil || back.RemovedReason != "" {
			t.Fatalf("restored: %+v", back)
		}
		requireEqual(t, removedOf(t, b, op), []string{"2.0.0:", "1.1.0:", "1.0.0:filter"}, "after restore")
		_, err = b.store.OperatorVersionSetRemoved(b.ctx, &store.OperatorVersionSetRemovedParams{OperatorID: op.ID, Version: "9.9.9", RemovedAt: &t1})
		requireErr(t, err, store.ErrNotFound, "unknown version")
		_, err = b.store.OperatorVersionSetRemoved(b.ctx, &store.OperatorVersionSetRemovedParams{OperatorID: uuid.NewString(), Version: "1.0.0", RemovedAt: &t1})
		requireErr(t, err, store.ErrNotFound, "unknown operator")
	}},
	{"RefreshRecordAndDue", func(t *testing.T, b *testBundle) {
		a := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "a"})
		bb := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "b"})
		Operator(b.ctx, t, b.store, &OperatorOpts{Name: "c"})
		_, err := b.store.OperatorRefreshGet(b.ctx, a.ID)
		requireErr(t, err, store.ErrNotFound, "before the first refresh")
		requireEqual(t, dueNames(t, b, b.now, 10), []string{"a", "b", "c"}, "never refreshed: all due, by name")
		requireEqual(t, dueNames(t, b, b.now, 2), []string{"a", "b"}, "limit")

		t0 := b.now
		r := recordRefresh(t, b, a, t0, t0.Add(10*time.Minute), true, `"e1"`, "")
		want := &store.OperatorRefresh{OperatorID: a.ID, Source: a.ChartRepository + " " + a.ChartName, ETag: `"e1"`,
			LastModified: `lm-"e1"`, CheckedAt: t0, SucceededAt: &t0, NextAt: t0.Add(10 * time.Minute)}
		requireEqual(t, r, want, "recorded")
		got, err := b.store.OperatorRefreshGet(b.ctx, a.ID)
		requireOK(t, err, "get")
		requireEqual(t, got, want, "read back")
		recordRefresh(t, b, bb, t0, t0.Add(-time.Second), true, "", "")
		// c never refreshed comes first, then b (due a second ago); a is due in 10 minutes.
		requireEqual(t, dueNames(t, b, b.now, 10), []string{"c", "b"}, "due now")
		requireEqual(t, dueNames(t, b, t0.Add(10*time.Minute), 10), []string{"c", "b", "a"}, "due in 10 minutes")

		// Failures count up and keep the last success; a success resets them.
		t1, t2, t3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
		r = recordRefresh(t, b, a, t1, t1.Add(time.Minute), false, `"e1"`, "index.yaml: connection refused")
		r = recordRefresh(t, b, a, t2, t2.Add(time.Minute), false, `"e1"`, "index.yaml: timed out")
		want = &store.OperatorRefresh{OperatorID: a.ID, Source: want.Source, ETag: `"e1"`, LastModified: `lm-"e1"`,
			CheckedAt: t2, SucceededAt: &t0, NextAt: t2.Add(time.Minute), Error: "index.yaml: timed out", Failures: 2}
		requireEqual(t, r, want, "after two failures")
		r = recordRefresh(t, b, a, t3, t3.Add(time.Hour), true, `"e2"`, "")
		if r.Failures != 0 || r.Error != "" || r.SucceededAt == nil || !r.SucceededAt.Equal(t3) || r.ETag != `"e2"` {
			t.Fatalf("after a success: %+v", r)
		}
		_, err = b.store.OperatorRefreshRecord(b.ctx, &store.OperatorRefreshRecordParams{OperatorID: uuid.NewString(),
			Source: "x", CheckedAt: t0, NextAt: t0})
		requireErr(t, err, store.ErrNotFound, "unknown operator")
		_, err = b.store.OperatorRefreshGet(b.ctx, "not-a-uuid")
		requireErr(t, err, store.ErrNotFound, "malformed id")
	}},
}
