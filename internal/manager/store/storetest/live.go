package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// rollout creates a deployment of op's version to clusters at created, then gives each cluster
// the status in statuses (and a release named after the version, at revision rev) and the
// deployment status.
func rollout(t *testing.T, b *testBundle, op *store.Operator, version string, created time.Time,
	status store.DeploymentStatus, rev int, statuses map[string]store.ClusterStatus, clusters ...string) *store.Deployment {
	t.Helper()
	in := NewDeployment(b.ctx, t, b.store, &DeploymentOpts{Operator: op, Clusters: clusters, CreatedAt: created})
	in.Version = version
	d, err := b.store.DeploymentCreate(b.ctx, in)
	requireOK(t, err, "create "+version)
	d, err = b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
		d.Status = status
		for _, c := range d.Clusters {
			c.Status, c.Namespace, c.Release, c.HelmRevision = statuses[c.ClusterName], "ns-"+version, op.Name+"-"+version, rev
		}
		return nil
	})
	requireOK(t, err, "update "+version)
	return d
}

// live is the LiveRelease d's cluster is; superseded when a newer deployment installed there.
func live(d *store.Deployment, cluster string, superseded bool) *store.LiveRelease {
	for _, c := range d.Clusters {
		if c.ClusterName == cluster {
			return &store.LiveRelease{OperatorID: d.OperatorID, OperatorName: d.OperatorName, ClusterName: cluster,
				Environment: c.Environment, DeploymentID: d.ID, DeploymentStatus: d.Status, Version: d.Version,
				Namespace: c.Namespace, Release: c.Release, HelmRevision: c.HelmRevision,
				DeploymentFinishedAt: d.FinishedAt, BakeWindow: d.BakeWindow, Superseded: superseded}
		}
	}
	panic("no cluster " + cluster)
}

var liveReleaseCases = []testCase{
	{"CancelledWhileValidatingIsLive", func(t *testing.T, b *testBundle) {
		x := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "x"})
		both := map[string]store.ClusterStatus{"c1": store.ClusterHealthy, "c2": store.ClusterHealthy}
		t0 := b.now.Add(-time.Hour)
		v1 := rollout(t, b, x, "1.0.0", t0, store.DeploymentCompleted, 1, both, "c1", "c2")
		// Cancelled while c1 validated 1.1.0 (installed there) and before c2 began: c1 runs 1.1.0.
		v2 := rollout(t, b, x, "1.1.0", t0.Add(time.Minute), store.DeploymentCancelled, 2,
			map[string]store.ClusterStatus{"c1": store.ClusterValidating, "c2": store.ClusterSkipped}, "c1", "c2")
		// A deployment still validating is not live there yet.
		rollout(t, b, x, "1.2.0", t0.Add(2*time.Minute), store.DeploymentValidating, 3,
			map[string]store.ClusterStatus{"c2": store.ClusterValidating}, "c2")
		got, err := b.store.LiveReleaseList(b.ctx, &store.LiveReleaseListParams{OperatorName: "x"})
		requireOK(t, err, "list")
		// v1 on c2 is superseded: 1.2.0 installs there (v2 skipped c2 but, in this data, at a revision).
		requireEqual(t, got, []*store.LiveRelease{live(v2, "c1", false), live(v1, "c2", true)}, "live after a cancel")
	}},
	{"SupersededOnlyByAnInstall", func(t *testing.T, b *testBundle) {
		x := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "x"})
		t0 := b.now.Add(-time.Hour)
		v1 := rollout(t, b, x, "1.0.0", t0, store.DeploymentCompleted, 1, map[string]store.ClusterStatus{"c1": store.ClusterHealthy}, "c1")
		// A newer deployment cancelled before it installed anything on c1 leaves v1 as it was.
		rollout(t, b, x, "1.1.0", t0.Add(time.Minute), store.DeploymentCancelled, 0, map[string]store.ClusterStatus{"c1": store.ClusterSkipped}, "c1")
		got, err := b.store.LiveReleaseList(b.ctx, &store.LiveReleaseListParams{OperatorName: "x"})
		requireOK(t, err, "list")
		requireEqual(t, got, []*store.LiveRelease{live(v1, "c1", false)}, "not superseded by a deployment that installed nothing")
		if got[0].DeploymentFinishedAt == nil {
			t.Fatal("a Completed deployment's live release has no DeploymentFinishedAt")
		}
		// One that installed and was rolled back supersedes it.
		rollout(t, b, x, "2.0.0", t0.Add(2*time.Minute), store.DeploymentRolledBack, 2, map[string]store.ClusterStatus{"c1": store.ClusterRolledBack}, "c1")
		got, err = b.store.LiveReleaseList(b.ctx, &store.LiveReleaseListParams{OperatorName: "x"})
		requireOK(t, err, "list")
		requireEqual(t, got, []*store.LiveRelease{live(v1, "c1", true)}, "superseded by a rolled-back install")
	}},
	{"NewestHealthyWins", func(t *testing.T, b *testBundle) {
		x := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "x"})
		y := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "a-y"})
		healthy := store.ClusterHealthy
		both := map[string]store.ClusterStatus{"c1": healthy, "c2": healthy}
		t0 := b.now.Add(-time.Hour)
		v1 := rollout(t, b, x, "1.0.0", t0, store.DeploymentCompleted, 1, both, "c1", "c2")
		v2 := rollout(t, b, x, "1.1.0", t0.Add(time.Minute), store.DeploymentCompleted, 2, both, "c1")
		// The newest deployment rolled back on c1 and failed on c2: the rows before it stay live.
		rollout(t, b, x, "2.0.0", t0.Add(2*time.Minute), store.DeploymentRolledBack, 3,
			map[string]store.ClusterStatus{"c1": store.ClusterRolledBack, "c2": store.ClusterFailed}, "c1", "c2")
		// Still validating elsewhere, but healthy on c3 already; pending on c4 (not live).
		v3 := rollout(t, b, x, "1.2.0", t0.Add(3*time.Minute), store.DeploymentValidating, 1,
			map[string]store.ClusterStatus{"c3": healthy, "c4": store.ClusterPending}, "c3", "c4")
		// Created at the same instant: the greater id is the newer.
		ids := []string{uuid.NewString(), uuid.NewString()}
		if ids[0] > ids[1] {
			ids[0], ids[1] = ids[1], ids[0]
		}
		var tied []*store.Deployment
		for _, id := range ids {
			in := NewDeployment(b.ctx, t, b.store, &DeploymentOpts{Operator: y, Clusters: []string{"c1"}, CreatedAt: t0})
			in.ID, in.Status = id, store.DeploymentCompleted
			in.Clusters[0].Status, in.Clusters[0].Release = healthy, "y-"+id
			d, err := b.store.DeploymentCreate(b.ctx, in)
			requireOK(t, err, "create a tied deployment")
			tied = append(tied, d)
		}

		// 2.0.0 installed on c1 and c2 and was rolled back: what it restored there is superseded.
		all := []*store.LiveRelease{live(tied[1], "c1", false), live(v2, "c1", true), live(v1, "c2", true), live(v3, "c3", false)}
		for _, tc := range []struct {
			name string
			p    store.LiveReleaseListParams
			want []*store.LiveRelease
		}{
			{"all, by operator then cluster", store.LiveReleaseListParams{}, all},
			{"one operator", store.LiveReleaseListParams{OperatorName: "x"}, all[1:]},
			{"one cluster", store.LiveReleaseListParams{ClusterName: "c1"}, all[:2]},
			{"both", store.LiveReleaseListParams{OperatorName: "x", ClusterName: "c2"}, all[2:3]},
			{"unknown operator", store.LiveReleaseListParams{OperatorName: "z"}, []*store.LiveRelease{}},
		} {
			got, err := b.store.LiveReleaseList(b.ctx, &tc.p)
			requireOK(t, err, tc.name)
			requireEqual(t, got, tc.want, tc.name)
		}
	}},
}

// record stores a health check of operator "op" on cluster "c" for deployment d.
func record(t *testing.T, b *testBundle, d *store.Deployment, health string, at time.Time) *store.OperatorHealth {
	t.Helper()
	h, err := b.store.OperatorHealthRecord(b.ctx, &store.OperatorHealthRecordParams{OperatorName: "op", ClusterName: "c",
		DeploymentID: d.ID, Health: health, Result: json.RawMessage(`{"health":"` + health + `"}`), CheckedAt: at})
	requireOK(t, err, "record "+health)
	return h
}

var operatorHealthCases = []testCase{
	{"RecordCountsFailures", func(t *testing.T, b *testBundle) {
		d1 := Deployment(b.ctx, t, b.store, nil)
		d2 := Deployment(b.ctx, t, b.store, nil)
		var counts []int
		for i, step := range []struct {
			d      *store.Deployment
			health string
		}{
			{d1, "Unhealthy"}, {d1, "Unhealthy"}, {d1, "Degraded"}, {d1, "Unhealthy"}, {d1, "Healthy"},
			{d1, "Unhealthy"}, {d1, "Unhealthy"}, {d2, "Unhealthy"}, {d2, "Degraded"}, {d1, "Degraded"},
		} {
			at := b.now.Add(time.Duration(i) * time.Second)
			h := record(t, b, step.d, step.health, at)
			counts = append(counts, h.ConsecutiveFailures)
			requireEqual(t, h, &store.OperatorHealth{OperatorName: "op", ClusterName: "c", DeploymentID: step.d.ID,
				Health: step.health, Result: json.RawMessage(`{"health":"` + step.health + `"}`),
				ConsecutiveFailures: h.ConsecutiveFailures, CheckedAt: at}, "record")
		}
		// Unhealthy counts, Degraded keeps, Healthy resets, another deployment starts over.
		requireEqual(t, counts, []int{1, 2, 2, 3, 0, 1, 2, 1, 1, 0}, "consecutive failures")
	}},
	{"ListAndDelete", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, nil)
		put := func(op, cluster, health string) *store.OperatorHealth {
			h, err := b.store.OperatorHealthRecord(b.ctx, &store.OperatorHealthRecordParams{OperatorName: op,
				ClusterName: cluster, DeploymentID: d.ID, Health: health, CheckedAt: b.now})
			requireOK(t, err, "record")
			return h
		}
		hs := []*store.OperatorHealth{put("a", "c1", "Healthy"), put("a", "c2", "Unhealthy"), put("b", "c1", "Degraded")}
		requireEqual(t, hs[0].Result, json.RawMessage(nil), "no result")
		for _, tc := range []struct {
			name string
			p    store.OperatorHealthListParams
			want []*store.OperatorHealth
		}{
			{"all", store.OperatorHealthListParams{}, hs},
			{"one operator", store.OperatorHealthListParams{OperatorName: "a"}, hs[:2]},
			{"one cluster", store.OperatorHealthListParams{ClusterName: "c1"}, []*store.OperatorHealth{hs[0], hs[2]}},
			{"one of each", store.OperatorHealthListParams{OperatorName: "a", ClusterName: "c2"}, hs[1:2]},
		} {
			got, err := b.store.OperatorHealthList(b.ctx, &tc.p)
			requireOK(t, err, tc.name)
			requireEqual(t, got, tc.want, tc.name)
		}
		requireOK(t, b.store.OperatorHealthDelete(b.ctx, "a", "c1"), "delete")
		requireOK(t, b.store.OperatorHealthDelete(b.ctx, "a", "c1"), "delete again (nothing stored)")
		got, err := b.store.OperatorHealthList(b.ctx, &store.OperatorHealthListParams{})
		requireOK(t, err, "list")
		requireEqual(t, got, hs[1:], "after the delete")

		// Refused: an unknown deployment, a health that is not one of the three, bad JSON.
		_, err = b.store.OperatorHealthRecord(b.ctx, &store.OperatorHealthRecordParams{OperatorName: "a", ClusterName: "c1",
			DeploymentID: uuid.NewString(), Health: "Healthy"})
		requireErr(t, err, store.ErrNotFound, "unknown deployment")
		for name, p := range map[string]store.OperatorHealthRecordParams{
			"health": {OperatorName: "a", ClusterName: "c1", DeploymentID: d.ID, Health: "Fine"},
			"result": {OperatorName: "a", ClusterName: "c1", DeploymentID: d.ID, Health: "Healthy", Result: json.RawMessage("{")},
			"names":  {DeploymentID: d.ID, Health: "Healthy"},
		} {
			if _, err := b.store.OperatorHealthRecord(b.ctx, &p); err == nil {
				t.Errorf("a record with a bad %s: no error", name)
			}
		}
	}},
}
