package server

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// wantRecord is the audit record one request must leave.
type wantRecord struct {
	actor, action, targetKind, targetName, result string
	// requestID is the X-Request-Id the request was sent with; from and to bound its time.
	requestID string
	from, to  time.Time
}

// auditTrail sends requests with their own request ids and remembers the record each must leave.
type auditTrail struct {
	b    *bundle
	seq  int
	want []wantRecord
}

// send makes one request, expects status, and expects a record of actor doing action to the target
// with result (targetName "" for one known only from the answer: set it with the returned index).
func (a *auditTrail) send(method, path, token string, body any, status int, actor, action, kind, name, result string) (response, int) {
	a.b.t.Helper()
	a.seq++
	id := fmt.Sprintf("audit-%s-%d", a.b.engine, a.seq)
	from := time.Now()
	r := a.b.do(method, path, token, body, "X-Request-Id", id)
	expect(a.b.t, fmt.Sprintf("%s %s as %s", method, path, actor), r, status)
	if got := r.header.Get("X-Request-Id"); got != id {
		a.b.t.Fatalf("%s %s: X-Request-Id %q, want %q", method, path, got, id)
	}
	a.want = append(a.want, wantRecord{actor: actor, action: action, targetKind: kind, targetName: name, result: result,
		requestID: id, from: from, to: time.Now()})
	return r, len(a.want) - 1
}

// TestAuditTrail makes every mutation of the API that is audited (operators, CRDs, deployments,
// approvals; clusters are in TestClusters), refused attempts and requests denied for want of a
// role, and reads each one's record back through GET /api/v1/audit: who, what, target, result,
// request id and time. The audit log itself is for Admins only.
func TestAuditTrail(t *testing.T) {
	repo := charttest.ServeRepository(t, widgetCharts()...)
	forEngine(t, func(t *testing.T, engine string) { testAuditTrail(t, engine, repo.URL) })
}

func testAuditTrail(t *testing.T, engine, repoURL string) {
	b := setup(t, engine)
	a := &auditTrail{b: b}
	admin, viewer, olga := b.admin(), b.viewer(), b.token("olga", auth.Operator)
	const widgetCRD = "widgets." + charttest.Group
	gadgetCRD := "gadgets." + charttest.Group

	// Operators and CRDs.
	a.send("POST", "/api/v1/operators", olga, api.OperatorRequest{Name: "widgets", Namespace: "widget-system",
		Chart: api.ChartRef{Repository: repoURL, Name: "widget-operator"}}, http.StatusCreated,
		"olga", "operator.create", "operator", "widgets", "success")
	a.send("POST", "/api/v1/operators", olga, api.OperatorRequest{Name: "widgets", Namespace: "widget-system",
		Chart: api.ChartRef{Repository: repoURL, Name: "widget-operator"}}, http.StatusConflict,
		"olga", "operator.create", "operator", "widgets", "invalid")
	gadget := quoted(charttest.YAML(charttest.Gadget(charttest.Base)))
	a.send("POST", "/api/v1/crds", olga, `{"definition": `+gadget+`, "version": "r1"}`, http.StatusCreated,
		"olga", "crd.create", "crd", gadgetCRD, "success")
	a.send("POST", "/api/v1/crds", olga, `{"definition": `+gadget+`}`, http.StatusBadRequest,
		"olga", "crd.create", "crd", gadgetCRD, "invalid")
	a.send("POST", "/api/v1/crds/"+widgetCRD+"/validate", viewer, api.ValidateRequest{Operator: "widgets", Version: "2.0.0"},
		http.StatusOK, "victor", "crd.validate", "crd", widgetCRD, "success")
	a.send("POST", "/api/v1/crds/"+widgetCRD+"/approve", admin, api.ApproveRequest{Operator: "widgets", Version: "2.0.0",
		Reason: "migrated by hand"}, http.StatusCreated, "alice", "crd.approve", "crd", widgetCRD, "success")
	a.send("POST", "/api/v1/crds/"+widgetCRD+"/approve", admin, api.ApproveRequest{Operator: "widgets", Version: "2.0.0"},
		http.StatusBadRequest, "alice", "crd.approve", "crd", widgetCRD, "invalid")
	a.send("POST", "/api/v1/crds/"+widgetCRD+"/approve", admin, api.ApproveRequest{Version: "9.9.9", Reason: "r"},
		http.StatusBadRequest, "alice", "crd.approve", "crd", widgetCRD, "invalid")

	// Deployments: create, cancel, rollback, switch.
	b.addCluster("dev-1", store.EnvironmentDev)
	b.addCluster("dev-2", store.EnvironmentDev)
	var direct, bg api.Deployment
	r, i := a.send("POST", "/api/v1/deployments", olga, `{"operator": "widgets", "version": "1.1.0", "clusters": ["dev-1"], "strategy": "Direct"}`,
		http.StatusAccepted, "olga", "deployment.create", "deployment", "", "success")
	r.json(t, &direct)
	a.want[i].targetName = direct.ID
	a.send("POST", "/api/v1/deployments", olga, `{"operator": "widgets", "version": "7.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`,
		http.StatusBadRequest, "olga", "deployment.create", "deployment", "widgets", "invalid")
	// BlueGreen switches from a live release: widgets 1.0.0 runs on dev-2, as the engine leaves it.
	var first api.Deployment
	r, i = a.send("POST", "/api/v1/deployments", olga, `{"operator": "widgets", "version": "1.0.0", "clusters": ["dev-2"], "strategy": "Direct"}`,
		http.StatusAccepted, "olga", "deployment.create", "deployment", "", "success")
	r.json(t, &first)
	a.want[i].targetName = first.ID
	b.setStatus(first.ID, store.DeploymentCompleted, func(d *store.Deployment) {
		for _, c := range d.Clusters {
			c.Status = store.ClusterHealthy
		}
	})
	r, i = a.send("POST", "/api/v1/deployments", olga, `{"operator": "widgets", "version": "2.0.0", "clusters": ["dev-2"],
 "strategy": "BlueGreen", "blueGreenConfig": {"greenNamespace": "widget-green", "validationPeriod": "PT1M", "autoSwitch": false}}`,
		http.StatusAccepted, "olga", "deployment.create", "deployment", "", "success")
	r.json(t, &bg)
	a.want[i].targetName = bg.ID
	a.send("POST", "/api/v1/deployments/"+bg.ID+"/switch", olga, nil, http.StatusAccepted,
		"olga", "deployment.switch", "deployment", bg.ID, "success")
	a.send("POST", "/api/v1/deployments/"+direct.ID+"/rollback", admin, api.RollbackRequest{Reason: "errors"}, http.StatusAccepted,
		"alice", "deployment.rollback", "deployment", direct.ID, "success")
	a.send("DELETE", "/api/v1/deployments/"+bg.ID, olga, nil, http.StatusAccepted,
		"olga", "deployment.cancel", "deployment", bg.ID, "success")

	// Approvals: approve, reject, and a decision the approval's role refuses.
	hour := time.Now().Add(time.Hour)
	approved := b.addApproval(direct.ID, approvals.KindBreakingCRD, approvals.RoleAdmin, 1, hour)
	rejected := b.addApproval(bg.ID, approvals.KindBreakingCRD, approvals.RoleAdmin, 1, hour)
	a.send("POST", "/api/v1/approvals/"+approved.ID+"/approve", viewer, api.DecisionRequest{Comment: "fine by me"},
		http.StatusForbidden, "victor", "approval.approve", "approval", approved.ID, "denied")
	a.send("POST", "/api/v1/approvals/"+approved.ID+"/approve", admin, api.DecisionRequest{Comment: "fine"},
		http.StatusOK, "alice", "approval.approve", "approval", approved.ID, "success")
	a.send("POST", "/api/v1/approvals/"+rejected.ID+"/reject", admin, api.DecisionRequest{Comment: "not this week"},
		http.StatusOK, "alice", "approval.reject", "approval", rejected.ID, "success")

	// Refused for want of a role (middleware): recorded as denied with the route as target.
	a.send("POST", "/api/v1/clusters", viewer, api.ClusterRequest{Name: "x", Environment: "Dev", Kubeconfig: "x"},
		http.StatusForbidden, "victor", "cluster.create", "route", "/api/v1/clusters", "denied")
	a.send("POST", "/api/v1/crds/"+widgetCRD+"/approve", olga, api.ApproveRequest{Version: "2.0.0", Reason: "r"},
		http.StatusForbidden, "olga", "crd.approve", "route", "/api/v1/crds/{name}/approve", "denied")
	r, _ = a.send("GET", "/api/v1/audit", viewer, nil, http.StatusForbidden, "victor", "read", "route", "/api/v1/audit", "denied")
	if e := r.apiError(t); e.Code != api.CodeForbidden {
		t.Fatalf("audit log as Viewer: %s", r.body)
	}

	a.check(t)
}

// check reads the audit log back and expects one record per request sent, as sent.
func (a *auditTrail) check(t *testing.T) {
	t.Helper()
	var log api.AuditList
	r := a.b.do("GET", "/api/v1/audit?limit=1000", a.b.admin(), nil)
	expect(t, "audit log as Admin", r, http.StatusOK)
	r.json(t, &log)
	byID := map[string][]api.AuditEvent{}
	for _, e := range log.Items {
		if e.RequestID == "" || e.Actor == "" || e.Action == "" || e.Result == "" || e.TargetKind == "" || e.Time.IsZero() {
			t.Errorf("incomplete audit record: %+v", e)
		}
		byID[e.RequestID] = append(byID[e.RequestID], e)
	}
	for _, w := range a.want {
		got := byID[w.requestID]
		if len(got) != 1 {
			t.Errorf("%s %s: %d records with request id %s, want 1: %+v", w.action, w.result, len(got), w.requestID, got)
			continue
		}
		e := got[0]
		if e.Actor != w.actor || e.Action != w.action || e.TargetKind != w.targetKind || e.TargetName != w.targetName || e.Result != w.result {
			t.Errorf("record of %s: %s %s %s/%s %s, want %s %s %s/%s %s", w.requestID, e.Actor, e.Action, e.TargetKind,
				e.TargetName, e.Result, w.actor, w.action, w.targetKind, w.targetName, w.result)
		}
		// Stored to the microsecond (PostgreSQL) or millisecond: the bounds are widened by that much.
		if e.Time.Before(w.from.Add(-time.Millisecond)) || e.Time.After(w.to.Add(time.Millisecond)) {
			t.Errorf("record of %s at %s, not while its request ran (%s to %s)", w.requestID, e.Time, w.from, w.to)
		}
	}
}
