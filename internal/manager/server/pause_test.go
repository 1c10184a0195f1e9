package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestDeploymentPause: pause and resume through the API: Operator or Admin, 202 with the
// deployment showing who paused it, when and why; the live event stream shows both; a second
// pause, a resume of a running deployment, and either on a finished one are 409 with a message;
// everything is in the audit log.
func TestDeploymentPause(t *testing.T) {
	forEngine(t, testDeploymentPause)
}

func testDeploymentPause(t *testing.T, engine string) {
	b := setup(t, engine)
	b.fleetOf()
	b.addOperator("pause-op", "pause-system", "1.14.0")
	olga, otto := b.token("olga", auth.Operator), b.token("otto", auth.Admin)
	r := b.do("POST", "/api/v1/deployments", olga, `{"operator": "pause-op", "version": "1.14.0", "environments": ["Dev"], "strategy": "Direct"}`)
	expect(t, "create", r, http.StatusAccepted)
	var d api.Deployment
	r.json(t, &d)
	path := "/api/v1/deployments/" + d.ID
	stream := openStream(t, b.client, b.url+path+"/events", b.viewer())
	for {
		if blk, _ := stream.next(nil); blk.event == "created" {
			break
		}
	}

	expect(t, "pause as Viewer", b.do("POST", path+"/pause", b.viewer(), nil), http.StatusForbidden)
	expectInvalid(t, "unknown field", b.do("POST", path+"/pause", olga, `{"why": "x"}`), "why")
	expectInvalid(t, "long reason", b.do("POST", path+"/pause", olga, api.PauseRequest{Reason: strings.Repeat("x", maxComment+1)}), "reason")
	expect(t, "resume a running deployment", b.do("POST", path+"/resume", olga, nil), http.StatusConflict)
	r = b.do("POST", path+"/pause", olga, api.PauseRequest{Reason: "change freeze"})
	expect(t, "pause", r, http.StatusAccepted)
	var got api.Deployment
	r.json(t, &got)
	if !got.Paused || got.PausedBy != "olga" || got.PausedAt == nil || got.PauseReason != "change freeze" || got.Status != d.Status {
		t.Fatalf("paused: %+v", got)
	}
	b.do("GET", path, b.viewer(), nil).json(t, &got)
	if !got.Paused || got.PausedBy != "olga" {
		t.Fatalf("GET while paused: %+v", got)
	}
	if blk, ev := stream.next(nil); blk.event != "paused" || !strings.Contains(ev.Message, "paused by olga: change freeze") {
		t.Fatalf("stream after the pause: %+v %+v", blk, ev)
	}
	r = b.do("POST", path+"/pause", otto, nil)
	expect(t, "second pause", r, http.StatusConflict)
	if e := r.apiError(t); e.Code != api.CodeConflict || !strings.Contains(e.Message, "already paused (by olga") {
		t.Fatalf("second pause: %s", r.body)
	}

	r = b.do("POST", path+"/resume", otto, nil)
	expect(t, "resume", r, http.StatusAccepted)
	got = api.Deployment{}
	r.json(t, &got)
	if got.Paused || got.PausedAt != nil || got.PausedBy != "" {
		t.Fatalf("resumed: %+v", got)
	}
	if blk, ev := stream.next(nil); blk.event != "resumed" || !strings.Contains(ev.Message, "resumed by otto") {
		t.Fatalf("stream after the resume: %+v %+v", blk, ev)
	}
	r = b.do("POST", path+"/resume", otto, nil)
	expect(t, "second resume", r, http.StatusConflict)
	if e := r.apiError(t); !strings.Contains(e.Message, "not paused") {
		t.Fatalf("second resume: %s", r.body)
	}

	// A finished deployment is neither paused nor resumed; one paused when it ended is not paused.
	expect(t, "pause again", b.do("POST", path+"/pause", olga, nil), http.StatusAccepted)
	b.setStatus(d.ID, store.DeploymentCompleted, nil)
	b.do("GET", path, b.viewer(), nil).json(t, &got)
	if got.Paused || got.PausedBy != "" {
		t.Fatalf("completed and paused: %+v", got)
	}
	for _, action := range []string{"pause", "resume"} {
		r = b.do("POST", path+"/"+action, olga, nil)
		expect(t, action+" a finished deployment", r, http.StatusConflict)
		if e := r.apiError(t); !strings.Contains(e.Message, "is Completed") {
			t.Fatalf("%s finished: %s", action, r.body)
		}
	}
	for _, action := range []string{"pause", "resume"} {
		expect(t, action+" unknown", b.do("POST", "/api/v1/deployments/"+uuid.NewString()+"/"+action, olga, nil), http.StatusNotFound)
	}

	var audit api.AuditList
	b.do("GET", "/api/v1/audit?targetKind=deployment&limit=1000", b.admin(), nil).json(t, &audit)
	count := map[string]int{}
	for _, e := range audit.Items {
		count[e.Action+"/"+e.Result]++
		if e.Action == "deployment.pause" && e.Result == "success" && e.Actor == "olga" && e.Details["reason"] == "change freeze" {
			count["reason recorded"]++
		}
	}
	for key, n := range map[string]int{"deployment.pause/success": 2, "deployment.pause/invalid": 2, "deployment.resume/success": 1,
		"deployment.resume/invalid": 3, "reason recorded": 1} {
		if count[key] != n {
			t.Errorf("audit %s: %d, want %d (%v)", key, count[key], n, count)
		}
	}
}
