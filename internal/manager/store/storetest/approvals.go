package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// ApprovalOpts are the factory's optional fields; zero values get defaults.
type ApprovalOpts struct {
	Deployment  *store.Deployment // nil: a new one
	Required    int               // 1
	RequestedBy string            // the deployment's requester
	ExpiresAt   time.Time         // in a day
	CreatedAt   time.Time
}

// Approval creates a pending "production" approval with a fresh id.
func Approval(ctx context.Context, tb testing.TB, e store.Executor, o *ApprovalOpts) *store.Approval {
	tb.Helper()
	if o == nil {
		o = &ApprovalOpts{}
	}
	d := o.Deployment
	if d == nil {
		d = Deployment(ctx, tb, e, nil)
	}
	expires := o.ExpiresAt
	if expires.IsZero() {
		expires = time.Now().Add(24 * time.Hour)
	}
	a, err := e.ApprovalCreate(ctx, &store.Approval{ID: uuid.NewString(), DeploymentID: d.ID, Kind: "production",
		RequiredRole: "EnvironmentOwner:Production", Required: o.Required, RequestedBy: cmpOr(o.RequestedBy, d.RequestedBy),
		ExpiresAt: expires, CreatedAt: o.CreatedAt})
	if err != nil {
		tb.Fatalf("create approval: %v", err)
	}
	return a
}

// decide records actor's decision on a at now.
func decide(b *testBundle, a *store.Approval, actor string, approve bool, now time.Time) (*store.Approval, error) {
	return b.store.ApprovalDecide(b.ctx, &store.ApprovalDecision{ApprovalID: a.ID, Actor: actor, Approve: approve,
		Comment: fmt.Sprintf("%s says %v", actor, approve)}, now)
}

var approvalCases = []testCase{
	{"CreateGetRoundTrip", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, nil)
		id := uuid.NewString()
		a, err := b.store.ApprovalCreate(b.ctx, &store.Approval{ID: strings.ToUpper(id), DeploymentID: d.ID,
			Kind: "versionUpgrade", RequiredRole: "Admin", RequestedBy: "alice", Reason: "1.0.0 → 2.0.0",
			ExpiresAt: b.now.Add(time.Hour), CreatedAt: b.now})
		requireOK(t, err, "create")
		want := &store.Approval{ID: id, DeploymentID: d.ID, Kind: "versionUpgrade", RequiredRole: "Admin", Required: 1,
			RequestedBy: "alice", Status: store.ApprovalPending, Reason: "1.0.0 → 2.0.0", ExpiresAt: b.now.Add(time.Hour),
			CreatedAt: b.now, UpdatedAt: b.now, Decisions: []*store.ApprovalDecision{}}
		requireEqual(t, a, want, "created")
		got, err := b.store.ApprovalGetByID(b.ctx, strings.ToUpper(id))
		requireOK(t, err, "get")
		requireEqual(t, got, want, "get")

		for _, bad := range []string{uuid.NewString(), "nope"} {
			_, err = b.store.ApprovalGetByID(b.ctx, bad)
			requireErr(t, err, store.ErrNotFound, "get "+bad)
			_, err = b.store.ApprovalDecide(b.ctx, &store.ApprovalDecision{ApprovalID: bad, Actor: "bob", Approve: true}, b.now)
			requireErr(t, err, store.ErrNotFound, "decide "+bad)
			_, err = b.store.ApprovalCreate(b.ctx, &store.Approval{DeploymentID: bad, Kind: "production", RequestedBy: "a", ExpiresAt: b.now})
			requireErr(t, err, store.ErrNotFound, "approval of deployment "+bad)
		}
		_, err = b.store.ApprovalCreate(b.ctx, &store.Approval{ID: id, DeploymentID: d.ID, Kind: "production", RequestedBy: "a", ExpiresAt: b.now})
		requireErr(t, err, store.ErrAlreadyExists, "same id")
		for name, a := range map[string]*store.Approval{
			"kind":      {DeploymentID: d.ID, RequestedBy: "a", ExpiresAt: b.now},
			"requester": {DeploymentID: d.ID, Kind: "production", ExpiresAt: b.now},
			"expiry":    {DeploymentID: d.ID, Kind: "production", RequestedBy: "a"},
			"status":    {DeploymentID: d.ID, Kind: "production", RequestedBy: "a", ExpiresAt: b.now, Status: store.ApprovalApproved},
			"decisions": {DeploymentID: d.ID, Kind: "production", RequestedBy: "a", ExpiresAt: b.now,
				Decisions: []*store.ApprovalDecision{{Actor: "b", Approve: true}}},
		} {
			if _, err := b.store.ApprovalCreate(b.ctx, a); err == nil {
				t.Errorf("create without a valid %s: no error", name)
			}
		}
	}},
	{"DecideRules", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, &DeploymentOpts{RequestedBy: "alice"})
		a := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, Required: 2, ExpiresAt: b.now.Add(time.Hour)})
		_, err := decide(b, a, "alice", true, b.now)
		requireErr(t, err, store.ErrConflict, "the requester approving their own request")
		_, err = decide(b, a, "alice", false, b.now)
		requireErr(t, err, store.ErrConflict, "the requester rejecting their own request")

		got, err := decide(b, a, "bob", true, b.now.Add(time.Second))
		requireOK(t, err, "bob approves")
		requireEqual(t, got.Status, store.ApprovalPending, "after one of two approvals")
		requireEqual(t, got.Decisions, []*store.ApprovalDecision{{ApprovalID: a.ID, Actor: "bob", Approve: true,
			Comment: "bob says true", At: b.now.Add(time.Second)}}, "decisions after bob")
		_, err = decide(b, a, "bob", true, b.now.Add(2*time.Second))
		requireErr(t, err, store.ErrConflict, "bob again")
		_, err = decide(b, a, "bob", false, b.now.Add(2*time.Second))
		requireErr(t, err, store.ErrConflict, "bob changing his mind")

		got, err = decide(b, a, "carol", true, b.now.Add(3*time.Second))
		requireOK(t, err, "carol approves")
		requireEqual(t, []any{got.Status, names(got.Decisions, func(d *store.ApprovalDecision) string { return d.Actor }), got.UpdatedAt},
			[]any{store.ApprovalApproved, []string{"bob", "carol"}, b.now.Add(3 * time.Second)}, "approved by two")
		_, err = decide(b, a, "dave", false, b.now.Add(4*time.Second))
		requireErr(t, err, store.ErrConflict, "deciding an approved request")
		read, err := b.store.ApprovalGetByID(b.ctx, a.ID)
		requireOK(t, err, "get")
		requireEqual(t, read, got, "read back")

		// One rejection decides, whatever the number of approvals required.
		r := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, Required: 3, ExpiresAt: b.now.Add(time.Hour)})
		_, err = decide(b, r, "bob", true, b.now)
		requireOK(t, err, "bob approves")
		got, err = decide(b, r, "carol", false, b.now)
		requireOK(t, err, "carol rejects")
		requireEqual(t, got.Status, store.ApprovalRejected, "after a rejection")
		requireEqual(t, got.Decisions[1].Comment, "carol says false", "the rejection's comment")
		_, err = decide(b, r, "dave", true, b.now)
		requireErr(t, err, store.ErrConflict, "approving a rejected request")

		// A decision in a transaction is undone with it.
		p := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, ExpiresAt: b.now.Add(time.Hour)})
		tx, err := b.store.Begin(b.ctx)
		requireOK(t, err, "begin")
		_, err = tx.ApprovalDecide(b.ctx, &store.ApprovalDecision{ApprovalID: p.ID, Actor: "bob", Approve: true}, b.now)
		requireOK(t, err, "decide in a transaction")
		requireOK(t, tx.Rollback(b.ctx), "rollback")
		read, err = b.store.ApprovalGetByID(b.ctx, p.ID)
		requireOK(t, err, "get")
		requireEqual(t, read, p, "after rollback")
	}},
	{"ConcurrentDecisions", func(t *testing.T, b *testBundle) {
		const required = 5
		a := Approval(b.ctx, t, b.store, &ApprovalOpts{Required: required, ExpiresAt: b.now.Add(time.Hour)})
		errs := parallel(func(i int) error {
			_, err := decide(b, a, fmt.Sprint("approver-", i), true, b.now)
			return err
		})
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("a late approver got %v, want ErrConflict", err)
			}
		}
		requireEqual(t, won, required, "decisions accepted")
		got, err := b.store.ApprovalGetByID(b.ctx, a.ID)
		requireOK(t, err, "get")
		requireEqual(t, []any{got.Status, len(got.Decisions)}, []any{store.ApprovalApproved, required}, "approved by exactly the required number")
	}},
	{"Expire", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, nil)
		future := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, ExpiresAt: b.now.Add(time.Minute)})
		past := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, Required: 2, ExpiresAt: b.now.Add(-time.Minute)})
		pastToo := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, ExpiresAt: b.now.Add(-2 * time.Minute)})
		decided := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, ExpiresAt: b.now.Add(-time.Minute)})
		_, err := decide(b, decided, "bob", true, b.now.Add(-2*time.Minute))
		requireOK(t, err, "decide before the expiry")
		_, err = decide(b, past, "bob", true, b.now.Add(-2*time.Minute))
		requireOK(t, err, "one of two approvals before the expiry")
		// Past the expiry but not yet swept: no decision either.
		_, err = decide(b, past, "carol", true, b.now)
		requireErr(t, err, store.ErrConflict, "deciding after the expiry")

		got, err := b.store.ApprovalExpire(b.ctx, b.now)
		requireOK(t, err, "expire")
		requireEqual(t, names(got, func(a *store.Approval) string { return a.ID }), []string{pastToo.ID, past.ID}, "expired, by expiry")
		for _, a := range got {
			requireEqual(t, []any{a.Status, a.UpdatedAt}, []any{store.ApprovalExpired, b.now}, "expired "+a.ID)
		}
		requireEqual(t, len(got[1].Decisions), 1, "decisions of the expired approval kept")
		_, err = decide(b, past, "carol", true, b.now.Add(-3*time.Minute))
		requireErr(t, err, store.ErrConflict, "deciding an expired approval")
		again, err := b.store.ApprovalExpire(b.ctx, b.now)
		requireOK(t, err, "expire again")
		requireEqual(t, len(again), 0, "expired twice")
		f, err := b.store.ApprovalGetByID(b.ctx, future.ID)
		requireOK(t, err, "get")
		requireEqual(t, f, future, "the unexpired approval")
		dd, err := b.store.ApprovalGetByID(b.ctx, decided.ID)
		requireOK(t, err, "get")
		requireEqual(t, dd.Status, store.ApprovalApproved, "a decided approval does not expire")
	}},
	{"ListPagesAndFilters", func(t *testing.T, b *testBundle) {
		d1 := Deployment(b.ctx, t, b.store, nil)
		d2 := Deployment(b.ctx, t, b.store, nil)
		var all, pendingOfD2 []string
		for i := range 13 {
			d := d1
			if i%2 == 0 {
				d = d2
			}
			a := Approval(b.ctx, t, b.store, &ApprovalOpts{Deployment: d, ExpiresAt: b.now.Add(time.Hour),
				CreatedAt: b.now.Add(time.Duration(i) * time.Second)})
			if i%3 == 0 {
				_, err := decide(b, a, "bob", false, b.now)
				requireOK(t, err, "reject")
			} else if d == d2 {
				pendingOfD2 = append([]string{a.ID}, pendingOfD2...)
			}
			all = append([]string{a.ID}, all...)
		}
		list := func(p store.ApprovalListParams) []string {
			p.Limit = store.NormalizeLimit(p.Limit)
			var out []string
			for {
				page, err := b.store.ApprovalList(b.ctx, &p)
				requireOK(t, err, "list")
				for _, a := range page {
					if a.Status == store.ApprovalRejected && len(a.Decisions) != 1 {
						t.Fatalf("listed without its decision: %+v", a)
					}
					out = append(out, a.ID)
				}
				if len(page) < p.Limit {
					return out
				}
				p.Before = page[len(page)-1].ID
			}
		}
		requireEqual(t, list(store.ApprovalListParams{Limit: 4}), all, "all, newest first, pages of 4")
		requireEqual(t, list(store.ApprovalListParams{Status: store.ApprovalPending, DeploymentID: d2.ID, Limit: 2}),
			pendingOfD2, "pending of d2")
		for _, p := range []store.ApprovalListParams{{DeploymentID: "nope"}, {Before: "nope"}, {Status: store.ApprovalExpired}} {
			requireEqual(t, list(p), []string(nil), fmt.Sprintf("list %+v", p))
		}
	}},
}
