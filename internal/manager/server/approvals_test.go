package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// addApproval stores a pending approval of the deployment, requested by otto, as the engine does
// when it plans a deployment that needs one.
func (b *bundle) addApproval(deploymentID, kind, role string, required int, expires time.Time) *store.Approval {
	b.t.Helper()
	a, err := b.store.ApprovalCreate(context.Background(), &store.Approval{DeploymentID: deploymentID, Kind: kind,
		RequiredRole: role, Required: required, RequestedBy: "otto", Reason: kind + " needs approval",
		ExpiresAt: expires, CreatedAt: time.Now()})
	if err != nil {
		b.t.Fatal(err)
	}
	return a
}

func TestApprovals(t *testing.T) {
	forEngine(t, testApprovals)
}

func testApprovals(t *testing.T, engine string) {
	b := setup(t, engine)
	b.addCluster("prod-1", store.EnvironmentProduction)
	b.addOperator("widgets", "widget-system", "2.0.0")
	otto := b.token("otto", auth.Operator)
	r := b.do("POST", "/api/v1/deployments", otto, `{"operator": "widgets", "version": "2.0.0", "environments": ["Production"], "strategy": "Direct"}`)
	expect(t, "submit", r, http.StatusAccepted)
	var d api.Deployment
	r.json(t, &d)

	hour := time.Now().Add(time.Hour)
	production := b.addApproval(d.ID, approvals.KindProduction, approvals.RoleProductionOwner, 1, hour)
	upgrade := b.addApproval(d.ID, approvals.KindVersionUpgrade, approvals.RoleAdmin, 2, hour)
	crd := b.addApproval(d.ID, approvals.KindBreakingCRD, approvals.RoleAdmin, 1, hour)
	expired := b.addApproval(d.ID, approvals.KindBreakingCRD, approvals.RoleAdmin, 1, time.Now().Add(-time.Minute))

	viewer, admin, bob := b.viewer(), b.admin(), b.token("bob", auth.Admin)
	owner := b.token("olga", auth.Operator, auth.EnvironmentOwnerOf("Production"))
	devOwner := b.token("dan", auth.EnvironmentOwnerOf("Dev"))

	// The list: pending by default, newest first, filterable.
	list := b.listApprovals(t, "")
	if len(list.Items) != 4 || list.Items[0].ID != expired.ID || list.Items[3].ID != production.ID {
		t.Fatalf("pending approvals: %+v", list)
	}
	p := list.Items[3]
	if p.DeploymentID != d.ID || p.Kind != "production" || p.RequiredRole != "EnvironmentOwner:Production" || p.Required != 1 ||
		p.RequestedBy != "otto" || p.Status != "pending" || len(p.Decisions) != 0 || p.ExpiresAt.IsZero() {
		t.Fatalf("approval %+v", p)
	}
	if l := b.listApprovals(t, "?deploymentId="+uuid.NewString()); len(l.Items) != 0 {
		t.Fatalf("other deployment: %+v", l)
	}
	if l := b.listApprovals(t, "?deploymentId="+d.ID+"&limit=3"); len(l.Items) != 3 || l.Continue == "" {
		t.Fatalf("first page: %+v", l)
	} else if l2 := b.listApprovals(t, "?limit=3&continue="+l.Continue); len(l2.Items) != 1 || l2.Items[0].ID != production.ID {
		t.Fatalf("second page: %+v", l2)
	}
	expectInvalid(t, "bad status", b.do("GET", "/api/v1/approvals?status=maybe", viewer, nil), "status")

	path := func(a *store.Approval, verb string) string { return "/api/v1/approvals/" + a.ID + "/" + verb }
	denied := func(what, token string, a *store.Approval, verb, reason, says string) {
		t.Helper()
		r := b.do("POST", path(a, verb), token, api.DecisionRequest{Comment: "looks fine"})
		expect(t, what, r, http.StatusForbidden)
		if e := r.apiError(t); e.Code != api.CodeForbidden || e.Details["reason"] != reason || !strings.Contains(e.Message, says) {
			t.Fatalf("%s: %s", what, r.body)
		}
	}
	// The policy: nobody decides their own request; the approval's role decides who may.
	denied("requester approves", otto, production, "approve", approvals.ReasonOwnRequest, "cannot approve or reject its own request")
	denied("requester rejects", otto, production, "reject", approvals.ReasonOwnRequest, "cannot approve or reject its own request")
	denied("Viewer approves", viewer, production, "approve", approvals.ReasonRole, "needs EnvironmentOwner:Production or Admin")
	denied("owner of Dev approves Production", devOwner, production, "approve", approvals.ReasonRole, "EnvironmentOwner:Production")
	denied("Production owner approves an upgrade", owner, upgrade, "approve", approvals.ReasonRole, "needs the Admin role")

	// The owner of Production approves production; a second decision finds it decided.
	r = b.do("POST", path(production, "approve"), owner, api.DecisionRequest{Comment: "change window agreed"})
	expect(t, "owner approves", r, http.StatusOK)
	var got api.DeploymentApproval
	r.json(t, &got)
	if got.Status != "approved" || got.Approvals != 1 || len(got.Decisions) != 1 || got.Decisions[0].Actor != "olga" ||
		got.Decisions[0].Decision != "approve" || got.Decisions[0].Comment != "change window agreed" {
		t.Fatalf("approved: %+v", got)
	}
	r = b.do("POST", path(production, "approve"), admin, nil)
	expect(t, "approve a decided approval", r, http.StatusConflict)
	if e := r.apiError(t); e.Code != api.CodeConflict || !strings.Contains(e.Message, "approved") || strings.HasSuffix(e.Message, "conflict") {
		t.Fatalf("decided: %s", r.body)
	}

	// Two Admins for the upgrade: one approval leaves it pending, the same person again is refused.
	r = b.do("POST", path(upgrade, "approve"), admin, nil)
	expect(t, "first admin", r, http.StatusOK)
	if r.json(t, &got); got.Status != "pending" || got.Approvals != 1 {
		t.Fatalf("one of two: %+v", got)
	}
	r = b.do("POST", path(upgrade, "approve"), admin, api.DecisionRequest{Comment: "again"})
	expect(t, "same admin twice", r, http.StatusConflict)
	if e := r.apiError(t); !strings.Contains(e.Message, "already decided") {
		t.Fatalf("twice: %s", r.body)
	}
	r = b.do("POST", path(upgrade, "approve"), bob, api.DecisionRequest{Comment: "ok"})
	expect(t, "second admin", r, http.StatusOK)
	if r.json(t, &got); got.Status != "approved" || got.Approvals != 2 {
		t.Fatalf("two of two: %+v", got)
	}

	// A rejection needs a comment; a rejected request is not approved afterwards.
	expectInvalid(t, "reject without comment", b.do("POST", path(crd, "reject"), admin, nil), "comment")
	expectInvalid(t, "reject with a blank comment", b.do("POST", path(crd, "reject"), admin, api.DecisionRequest{Comment: "  "}), "comment")
	expectInvalid(t, "comment too long", b.do("POST", path(crd, "approve"), admin, api.DecisionRequest{Comment: strings.Repeat("x", maxComment+1)}), "comment")
	expectInvalid(t, "unknown field", b.do("POST", path(crd, "approve"), admin, `{"note": "x"}`), "note")
	r = b.do("POST", path(crd, "reject"), admin, api.DecisionRequest{Comment: "drops a stored field"})
	expect(t, "reject", r, http.StatusOK)
	if r.json(t, &got); got.Status != "rejected" || got.Decisions[0].Decision != "reject" {
		t.Fatalf("rejected: %+v", got)
	}
	expect(t, "approve a rejected approval", b.do("POST", path(crd, "approve"), bob, nil), http.StatusConflict)

	// An expired request is never decided.
	r = b.do("POST", path(expired, "approve"), admin, nil)
	expect(t, "approve an expired approval", r, http.StatusConflict)
	if e := r.apiError(t); !strings.Contains(e.Message, "expired") {
		t.Fatalf("expired: %s", r.body)
	}
	for _, id := range []string{uuid.NewString(), "nope"} {
		expect(t, "unknown approval", b.do("POST", "/api/v1/approvals/"+id+"/approve", admin, nil), http.StatusNotFound)
	}

	if l := b.listApprovals(t, "?status=approved"); len(l.Items) != 2 {
		t.Fatalf("approved: %+v", l)
	}
	if l := b.listApprovals(t, "?status=all"); len(l.Items) != 4 {
		t.Fatalf("all: %+v", l)
	}
	if l := b.listApprovals(t, ""); len(l.Items) != 1 || l.Items[0].ID != expired.ID {
		t.Fatalf("still pending: %+v", l)
	}

	// The full history is in the audit log, with the comments and the refusals.
	var audit api.AuditList
	b.do("GET", "/api/v1/audit?targetKind=approval&limit=1000", admin, nil).json(t, &audit)
	count := map[string]int{}
	var comment bool
	for _, e := range audit.Items {
		count[e.Action+"/"+e.Result]++
		if e.Action == "approval.approve" && e.Actor == "olga" && e.Result == "success" {
			comment = e.Details["comment"] == "change window agreed" && e.Details["deploymentId"] == d.ID && e.Details["status"] == "approved"
		}
	}
	for key, n := range map[string]int{"approval.approve/success": 3, "approval.reject/success": 1, "approval.approve/denied": 4,
		"approval.reject/denied": 1, "approval.approve/invalid": 4} {
		if count[key] != n {
			t.Errorf("audit %s: %d, want %d (%v)", key, count[key], n, count)
		}
	}
	if !comment {
		t.Errorf("no audit record of olga's approval with its comment: %+v", audit.Items)
	}
}

func (b *bundle) listApprovals(t *testing.T, query string) api.ApprovalList {
	t.Helper()
	r := b.do("GET", "/api/v1/approvals"+query, b.viewer(), nil)
	expect(t, "approvals "+query, r, http.StatusOK)
	var l api.ApprovalList
	r.json(t, &l)
	return l
}
