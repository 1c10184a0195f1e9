package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/designtest"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// designLogFile is the design's example log line (operator-manager-spec.md, "Logging").
var designLogFile = filepath.Join("..", "telemetry", "testdata", "design-log.json")

// TestDeploymentLogs_CallerIsUserID: a deployment requested by olga is paused by bert, resumed
// by otto, read by victor, approved by alice and cancelled by bert, with a refused resume on the
// way. Each request's lines about the deployment (the handler's, the refusal's, the access log
// line) carry the design's nine fields with the deployment's id, operator and version, and as
// userId the caller who sent that request, not the requester. Every line of the run that names
// the deployment is checked, and every line with a deploymentId has the nine fields.
func TestDeploymentLogs_CallerIsUserID(t *testing.T) {
	forEngine(t, testDeploymentLogsCallerIsUserID)
}

func testDeploymentLogsCallerIsUserID(t *testing.T, engine string) {
	b := setup(t, engine)
	b.fleetOf()
	b.addOperator("logs-op", "logs-system", "1.14.0")
	olga, bert, otto := b.token("olga", auth.Operator), b.token("bert", auth.Operator), b.token("otto", auth.Admin)
	r := b.do("POST", "/api/v1/deployments", olga, `{"operator": "logs-op", "version": "1.14.0", "environments": ["Production"], "strategy": "Direct"}`)
	expect(t, "create", r, http.StatusAccepted)
	var d api.Deployment
	r.json(t, &d)
	path := "/api/v1/deployments/" + d.ID
	a := b.addApproval(d.ID, approvals.KindProduction, approvals.RoleAdmin, 1, time.Now().Add(time.Hour))

	// Each request: the caller its lines must name, and the line it writes besides the access log.
	type step struct {
		method, path, token, user, line string
		status                          int
		requestID                       string
	}
	steps := []step{
		{"POST", "/api/v1/deployments", olga, "olga", "server: Deployment submitted", http.StatusAccepted, r.header.Get("X-Request-Id")},
		{"POST", path + "/pause", bert, "bert", "server: Deployment request accepted", http.StatusAccepted, ""},
		{"POST", path + "/resume", otto, "otto", "server: Deployment request accepted", http.StatusAccepted, ""},
		{"POST", path + "/resume", bert, "bert", "server: Request refused", http.StatusConflict, ""},
		{"GET", path, b.viewer(), "victor", "", http.StatusOK, ""},
		{"GET", path + "/events", b.viewer(), "victor", "", http.StatusOK, ""},
		{"GET", path + "/rollback-status", b.viewer(), "victor", "", http.StatusOK, ""},
		{"POST", "/api/v1/approvals/" + a.ID + "/approve", b.admin(), "alice", "server: Approval decided", http.StatusOK, ""},
		{"DELETE", path, bert, "bert", "server: Deployment request accepted", http.StatusAccepted, ""},
	}
	byID := map[string]*step{}
	for i := range steps {
		s := &steps[i]
		if s.requestID == "" {
			r := b.do(s.method, s.path, s.token, nil)
			expect(t, s.method+" "+s.path+" as "+s.user, r, s.status)
			s.requestID = r.header.Get("X-Request-Id")
		}
		byID[s.requestID] = s
	}

	design := designtest.Load(t, designLogFile)
	seen := map[string]bool{} // requestId + " " + message, of the lines naming the deployment
	for _, l := range logRecords(t, b.logs.Bytes()) {
		raw, _ := json.Marshal(l)
		if _, ok := l[telemetry.KeyDeploymentID]; ok {
			if diff := designtest.Types(design, l); len(diff) != 0 {
				t.Errorf("a line with a deploymentId without the design's fields (%v): %s", diff, raw)
			}
		}
		if !strings.Contains(string(raw), d.ID) {
			continue
		}
		s := byID[str(l, telemetry.KeyRequestID)]
		if s == nil {
			t.Errorf("a line naming the deployment of no request of the test: %s", raw)
			continue
		}
		if l[telemetry.KeyDeploymentID] != d.ID || l[telemetry.KeyOperatorName] != "logs-op" || l[telemetry.KeyVersion] != "1.14.0" ||
			l[telemetry.KeyUserID] != s.user || l[telemetry.KeyCluster] != "" {
			t.Errorf("want deployment %s of logs-op 1.14.0, cluster \"\" and userId %s (the caller): %s", d.ID, s.user, raw)
		}
		seen[s.requestID+" "+str(l, telemetry.KeyMessage)] = true
	}
	for _, s := range steps {
		for _, msg := range []string{"server: Request", s.line} {
			if msg != "" && !seen[s.requestID+" "+msg] {
				t.Errorf("%s %s as %s: no line %q names the deployment:\n%s", s.method, s.path, s.user, msg, b.logs.Bytes())
			}
		}
	}
}

// logRecords decodes every log line; one that is not JSON fails the test.
func logRecords(t *testing.T, logs []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %s", sc.Bytes())
		}
		out = append(out, l)
	}
	return out
}

func str(l map[string]any, key string) string {
	s, _ := l[key].(string)
	return s
}
