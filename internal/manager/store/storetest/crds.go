package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func crdRevision(name, group, opID, version, digest string) *store.CRDSchemaInsertParams {
	return &store.CRDSchemaInsertParams{
		Name: name, Group: group, Kind: "Widget", Scope: "Namespaced", OperatorID: opID, Version: version,
		Digest: digest, Definition: []byte(fmt.Sprintf(`{"metadata":{"name":%q},"digest":%q}`, name, digest)),
	}
}

var crdCases = []testCase{
	{"RevisionsPerSource", func(t *testing.T, b *testBundle) {
		a := Operator(b.ctx, t, b.store, nil)
		o2 := Operator(b.ctx, t, b.store, nil)
		const name = "widgets.example.com"
		p := crdRevision(name, "example.com", a.ID, "1.0.0", "d1")
		p.Now = b.now
		r1, err := b.store.CRDSchemaInsert(b.ctx, p)
		requireOK(t, err, "insert")
		requireEqual(t, r1, &store.CRDSchema{ID: r1.ID, Name: name, Group: "example.com", Kind: "Widget",
			Scope: "Namespaced", OperatorID: a.ID, Version: "1.0.0", Digest: "d1", Definition: p.Definition,
			CreatedAt: b.now}, "inserted")
		_, err = b.store.CRDSchemaInsert(b.ctx, crdRevision(name, "example.com", a.ID, "1.1.0", "d1"))
		requireErr(t, err, store.ErrAlreadyExists, "same digest, same operator")
		r2, err := b.store.CRDSchemaInsert(b.ctx, crdRevision(name, "example.com", a.ID, "2.0.0", "d2"))
		requireOK(t, err, "new digest")
		direct, err := b.store.CRDSchemaInsert(b.ctx, crdRevision(name, "example.com", "", "posted", "d1"))
		requireOK(t, err, "same digest, posted directly")
		if direct.OperatorID != "" {
			t.Fatalf("posted directly: operator %q, want empty", direct.OperatorID)
		}
		_, err = b.store.CRDSchemaInsert(b.ctx, crdRevision(name, "example.com", "", "posted again", "d1"))
		requireErr(t, err, store.ErrAlreadyExists, "same digest posted twice")
		_, err = b.store.CRDSchemaInsert(b.ctx, crdRevision(name, "example.com", o2.ID, "1.0.0", "d1"))
		requireOK(t, err, "same digest, another operator")
		_, err = b.store.CRDSchemaInsert(b.ctx, crdRevision(name, "example.com", uuid.NewString(), "1.0.0", "d9"))
		requireErr(t, err, store.ErrNotFound, "unknown operator")

		all, err := b.store.CRDSchemaList(b.ctx, &store.CRDSchemaListParams{Name: name})
		requireOK(t, err, "list")
		requireEqual(t, names(all, func(s *store.CRDSchema) string { return s.Version + "/" + s.Digest }),
			[]string{"1.0.0/d1", "2.0.0/d2", "posted/d1", "1.0.0/d1"}, "oldest first")
		ofA, err := b.store.CRDSchemaList(b.ctx, &store.CRDSchemaListParams{Name: name, OperatorID: a.ID})
		requireOK(t, err, "list of operator a")
		requireEqual(t, ofA, []*store.CRDSchema{r1, r2}, "operator a's revisions")
		none, err := b.store.CRDSchemaList(b.ctx, &store.CRDSchemaListParams{Name: "unknown.example.com"})
		requireOK(t, err, "list of an unknown CRD")
		if none == nil || len(none) != 0 {
			t.Fatalf("unknown CRD: %v, want empty, non-nil", none)
		}
	}},
	{"DuplicateRevisionInATransaction", func(t *testing.T, b *testBundle) {
		// Registering an operator stores every version's CRDs in one transaction, and versions
		// usually ship the same CRD: the duplicate must leave the transaction usable.
		a := Operator(b.ctx, t, b.store, nil)
		const name = "gadgets.example.com"
		err := store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.CRDSchemaInsert(ctx, crdRevision(name, "example.com", a.ID, "1.0.0", "g1")); err != nil {
				return err
			}
			_, err := tx.CRDSchemaInsert(ctx, crdRevision(name, "example.com", a.ID, "1.0.1", "g1"))
			requireErr(t, err, store.ErrAlreadyExists, "the same definition in a second version")
			_, err = tx.CRDSchemaInsert(ctx, crdRevision(name, "example.com", a.ID, "2.0.0", "g2"))
			return err
		})
		requireOK(t, err, "the transaction after a duplicate")
		all, err := b.store.CRDSchemaList(b.ctx, &store.CRDSchemaListParams{Name: name})
		requireOK(t, err, "list")
		requireEqual(t, names(all, func(s *store.CRDSchema) string { return s.Version + "/" + s.Digest }),
			[]string{"1.0.0/g1", "2.0.0/g2"}, "both revisions committed")
	}},
	{"ListSummaries", func(t *testing.T, b *testBundle) {
		type want struct {
			Name, Group string
			Revisions   int
		}
		var wants []want
		for i, n := range seq("crd", 12) {
			name := n + ".example.com"
			group := "example.com"
			if i%3 == 0 {
				group = "other.io"
			}
			for r := 0; r <= i%3; r++ {
				_, err := b.store.CRDSchemaInsert(b.ctx, crdRevision(name, group, "", fmt.Sprint(r), fmt.Sprintf("d%d", r)))
				requireOK(t, err, "insert")
			}
			wants = append(wants, want{name, group, i%3 + 1})
		}
		var got []want
		p := &store.CRDListParams{Limit: 5}
		for {
			page, err := b.store.CRDList(b.ctx, p)
			requireOK(t, err, "list")
			for _, s := range page {
				if s.Latest == nil || s.Latest.Name != s.Name || s.Latest.Version != fmt.Sprint(s.Revisions-1) {
					t.Fatalf("summary %s: latest %+v, want revision %d", s.Name, s.Latest, s.Revisions-1)
				}
				got = append(got, want{s.Name, s.Group, s.Revisions})
			}
			if len(page) < p.Limit {
				break
			}
			p.After = page[len(page)-1].Name
		}
		requireEqual(t, got, wants, "summaries by name")
		other, err := b.store.CRDList(b.ctx, &store.CRDListParams{Group: "other.io"})
		requireOK(t, err, "list by group")
		requireEqual(t, len(other), 4, "CRDs of group other.io")
	}},
	{"Approvals", func(t *testing.T, b *testBundle) {
		for i, n := range []string{"a.example.com", "b.example.com", "a.example.com"} {
			a, err := b.store.CRDApprovalCreate(b.ctx, &store.CRDApprovalCreateParams{CRDName: n,
				FromDigest: "d1", ToDigest: fmt.Sprintf("d%d", i+2), ToVersion: "2.0.0", ApprovedBy: "alice",
				Reason: "migration done", RequestID: "req-1", Now: b.now})
			requireOK(t, err, "approve")
			if a.ID == 0 || a.CRDName != n || a.ApprovedBy != "alice" || !a.CreatedAt.Equal(b.now) {
				t.Fatalf("approval: %+v", a)
			}
		}
		as, err := b.store.CRDApprovalList(b.ctx, "a.example.com")
		requireOK(t, err, "list")
		requireEqual(t, names(as, func(a *store.CRDApproval) string { return a.ToDigest }), []string{"d2", "d4"}, "approvals of a, oldest first")
		none, err := b.store.CRDApprovalList(b.ctx, "c.example.com")
		requireOK(t, err, "list of none")
		if none == nil || len(none) != 0 {
			t.Fatalf("no approvals: %v, want empty, non-nil", none)
		}
	}},
}
