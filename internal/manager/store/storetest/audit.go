package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

var auditCases = []testCase{
	{"InsertListNewestFirst", func(t *testing.T, b *testBundle) {
		actors := []string{"alice", "bob", "carol"}
		var ids []int64
		for i := range 30 {
			e, err := b.store.AuditInsert(b.ctx, &store.AuditInsertParams{
				At: b.now.Add(time.Duration(i) * time.Second), Actor: actors[i%3],
				Action: []string{"cluster.create", "cluster.access"}[i%2], TargetKind: "cluster",
				TargetName: fmt.Sprintf("c%d", i%5), Result: "success", RequestID: fmt.Sprint("req-", i),
				Details: fmt.Sprintf(`{"i":%d}`, i),
			})
			requireOK(t, err, "insert")
			if len(ids) > 0 && e.ID <= ids[len(ids)-1] {
				t.Fatalf("ids not increasing: %d after %d", e.ID, ids[len(ids)-1])
			}
			ids = append(ids, e.ID)
		}
		e, err := b.store.AuditInsert(b.ctx, &store.AuditInsertParams{At: b.now, Actor: "dave", Action: "crd.approve", Result: "denied"})
		requireOK(t, err, "insert without details")
		requireEqual(t, e, &store.AuditEvent{ID: e.ID, At: b.now, Actor: "dave", Action: "crd.approve", Result: "denied", Details: "{}"}, "defaults")

		page := func(p store.AuditListParams) []string {
			var out []string
			for {
				evs, err := b.store.AuditList(b.ctx, &p)
				requireOK(t, err, "list")
				for _, e := range evs {
					out = append(out, e.RequestID)
				}
				if len(evs) < p.Limit {
					return out
				}
				p.BeforeID = evs[len(evs)-1].ID
			}
		}
		var want []string
		for i := 29; i >= 0; i-- {
			if actors[i%3] == "bob" && i%2 == 1 {
				want = append(want, fmt.Sprint("req-", i))
			}
		}
		requireEqual(t, page(store.AuditListParams{Actor: "bob", Action: "cluster.access", Limit: 2}), want, "bob's accesses, newest first")
		all := page(store.AuditListParams{Limit: 7})
		requireEqual(t, len(all), 31, "all events in pages of 7")
		requireEqual(t, all[0], "", "newest first (dave's event)")
		want = nil
		for i := 29; i >= 20; i-- {
			if i%5 == 3 {
				want = append(want, fmt.Sprint("req-", i))
			}
		}
		requireEqual(t, page(store.AuditListParams{TargetKind: "cluster", TargetName: "c3", Since: timePtr(b.now.Add(20 * time.Second)), Limit: 100}),
			want, "target c3 since +20s")
	}},
}
