package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func baseline(b *testBundle, deployment, source string, data []byte) *store.OperatorBaselinePutParams {
	return &store.OperatorBaselinePutParams{OperatorName: "widgets", ClusterName: "prod-1", DeploymentID: deployment,
		Source: source, CapturedAt: b.now, Data: data}
}

func requireBaseline(t *testing.T, b *testBundle, deployment string, want *store.OperatorBaseline, what string) {
	t.Helper()
	got, err := b.store.OperatorBaselineGet(b.ctx, &store.OperatorBaselineGetParams{OperatorName: "widgets", ClusterName: "prod-1", DeploymentID: deployment})
	if want == nil {
		requireErr(t, err, store.ErrNotFound, what)
		return
	}
	requireOK(t, err, what)
	requireEqual(t, got, want, what)
}

var operatorBaselineCases = []testCase{
	{"PutGetReplace", func(t *testing.T, b *testBundle) {
		d1 := uuid.NewString()
		requireBaseline(t, b, d1, nil, "none yet")
		// Binary data (gzip) of a few hundred kB comes back byte for byte.
		data := bytes.Repeat([]byte{0x1f, 0x8b, 0, 0xff, 'x'}, 100_000)
		got, err := b.store.OperatorBaselinePut(b.ctx, baseline(b, d1, "deployment-start", data))
		requireOK(t, err, "put")
		want := &store.OperatorBaseline{OperatorName: "widgets", ClusterName: "prod-1", DeploymentID: d1, Source: "deployment-start", CapturedAt: b.now, Data: data}
		requireEqual(t, got, want, "put answers the row")
		requireBaseline(t, b, d1, want, "read back")
		requireBaseline(t, b, "", nil, "no last Healthy baseline")

		// The last Healthy check's baseline is replaced in place, beside the deployment's.
		p := baseline(b, "", "last-healthy", []byte("one"))
		_, err = b.store.OperatorBaselinePut(b.ctx, p)
		requireOK(t, err, "put last healthy")
		p.Data, p.CapturedAt = []byte("two"), b.now.Add(30*time.Second)
		_, err = b.store.OperatorBaselinePut(b.ctx, p)
		requireOK(t, err, "replace last healthy")
		requireBaseline(t, b, "", &store.OperatorBaseline{OperatorName: "widgets", ClusterName: "prod-1", Source: "last-healthy",
			CapturedAt: p.CapturedAt, Data: []byte("two")}, "the newer last Healthy baseline")
		requireBaseline(t, b, d1, want, "the deployment's, still")

		// Another operator or cluster is another baseline.
		_, err = b.store.OperatorBaselineGet(b.ctx, &store.OperatorBaselineGetParams{OperatorName: "widgets", ClusterName: "prod-2", DeploymentID: d1})
		requireErr(t, err, store.ErrNotFound, "another cluster")
	}},
	{"NewerDeploymentPrunesOlder", func(t *testing.T, b *testBundle) {
		d1, d2 := uuid.NewString(), uuid.NewString()
		for _, p := range []*store.OperatorBaselinePutParams{
			baseline(b, d1, "deployment-start", []byte("d1")),
			baseline(b, "", "last-healthy", []byte("lh")),
			{OperatorName: "widgets", ClusterName: "prod-2", DeploymentID: d1, Source: "deployment-start", CapturedAt: b.now, Data: []byte("other cluster")},
			baseline(b, d2, "deployment-start", []byte("d2")),
		} {
			_, err := b.store.OperatorBaselinePut(b.ctx, p)
			requireOK(t, err, "put")
		}
		requireBaseline(t, b, d1, nil, "the older deployment's, pruned")
		requireBaseline(t, b, d2, &store.OperatorBaseline{OperatorName: "widgets", ClusterName: "prod-1", DeploymentID: d2,
			Source: "deployment-start", CapturedAt: b.now, Data: []byte("d2")}, "the newer deployment's")
		requireBaseline(t, b, "", &store.OperatorBaseline{OperatorName: "widgets", ClusterName: "prod-1", Source: "last-healthy",
			CapturedAt: b.now, Data: []byte("lh")}, "the last Healthy one, kept")
		list, err := b.store.OperatorBaselineList(b.ctx, &store.OperatorBaselineListParams{OperatorName: "widgets", ClusterName: "prod-1"})
		requireOK(t, err, "list")
		requireEqual(t, len(list), 2, "baselines kept")

		// Newest capture first.
		late := baseline(b, "", "last-healthy", []byte("later"))
		late.CapturedAt = b.now.Add(time.Minute)
		_, err = b.store.OperatorBaselinePut(b.ctx, late)
		requireOK(t, err, "a later last Healthy baseline")
		list, err = b.store.OperatorBaselineList(b.ctx, &store.OperatorBaselineListParams{OperatorName: "widgets", ClusterName: "prod-1"})
		requireOK(t, err, "list")
		requireEqual(t, []string{list[0].DeploymentID, string(list[0].Data), list[1].DeploymentID}, []string{"", "later", d2}, "newest first")
		none, err := b.store.OperatorBaselineList(b.ctx, &store.OperatorBaselineListParams{OperatorName: "gadgets", ClusterName: "prod-1"})
		requireOK(t, err, "list none")
		requireEqual(t, len(none), 0, "another operator's")
		got, err := b.store.OperatorBaselineGet(b.ctx, &store.OperatorBaselineGetParams{OperatorName: "widgets", ClusterName: "prod-2", DeploymentID: d1})
		requireOK(t, err, "another cluster's, kept")
		requireEqual(t, string(got.Data), "other cluster", "another cluster's data")
	}},
	{"RefusesIncomplete", func(t *testing.T, b *testBundle) {
		for name, p := range map[string]*store.OperatorBaselinePutParams{
			"no operator":   {ClusterName: "c", Source: "s", CapturedAt: b.now, Data: []byte("x")},
			"no cluster":    {OperatorName: "o", Source: "s", CapturedAt: b.now, Data: []byte("x")},
			"no source":     {OperatorName: "o", ClusterName: "c", CapturedAt: b.now, Data: []byte("x")},
			"no time":       {OperatorName: "o", ClusterName: "c", Source: "s", Data: []byte("x")},
			"no data":       {OperatorName: "o", ClusterName: "c", Source: "s", CapturedAt: b.now},
			"oversize data": {OperatorName: "o", ClusterName: "c", Source: "s", CapturedAt: b.now, Data: make([]byte, store.MaxBaselineBytes+1)},
		} {
			if _, err := b.store.OperatorBaselinePut(b.ctx, p); err == nil {
				t.Errorf("%s: stored", name)
			}
		}
	}},
}
