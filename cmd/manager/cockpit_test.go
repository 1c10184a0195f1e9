//go:build e2e

package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/ui"
)

// TestOpenAPICommand: `manager openapi` prints the document serve answers at
// /api/v1/openapi.json, which is the committed api/manager/openapi.json.
func TestOpenAPICommand(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, "sqlite")
	r := d.run("openapi")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("manager openapi: exit %d: %s", r.code, r.stderr)
	}
	p := d.serve("--insecure-http")
	served := p.must("GET", "/api/v1/openapi.json", d.admin(), nil, http.StatusOK).body
	if r.stdout != string(served)+"\n" {
		t.Fatal("manager openapi differs from what manager serve answers at /api/v1/openapi.json")
	}
	committed, err := os.ReadFile("../../api/manager/openapi.json")
	if err != nil || !bytes.Equal(committed, []byte(r.stdout)) {
		t.Fatalf("api/manager/openapi.json differs from manager openapi (%v): run make generate", err)
	}
	if r := d.run("openapi", "extra"); r.code == 0 || !strings.Contains(r.stderr, "takes none") {
		t.Errorf("manager openapi extra: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestLoginLinkCommand: `manager login-link` prints BASE/login#ticket=…; the UI's page is served
// at /login, the ticket is exchanged once for a session token that works, a second use is
// refused, and bad flags are refused with a message.
func TestLoginLinkCommand(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, "sqlite")
	p := d.serve("--insecure-http", "--ui-session-ttl=2h")
	r := d.run("login-link", "--url", p.URL+"/", "--subject", "dana", "--role", "Operator,EnvironmentOwner:Production")
	if r.code != 0 {
		t.Fatalf("manager login-link: exit %d: %s", r.code, r.stderr)
	}
	link := strings.TrimSpace(r.stdout)
	ticket, ok := strings.CutPrefix(link, p.URL+"/login#ticket=")
	if !ok || ticket == "" {
		t.Fatalf("link %q, want %s/login#ticket=…", link, p.URL)
	}
	page := p.must("GET", "/login", "", nil, http.StatusOK)
	if page.header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy || !strings.Contains(string(page.body), "<html") {
		t.Fatalf("/login: %v %s", page.header, page.body)
	}
	body, err := json.Marshal(api.SessionRequest{Ticket: ticket})
	if err != nil {
		t.Fatal(err)
	}
	var s api.SessionResponse
	if err := json.Unmarshal(p.must("POST", "/api/v1/session", "", body, http.StatusOK).body, &s); err != nil {
		t.Fatal(err)
	}
	if s.Subject != "dana" || strings.Join(s.Roles, ",") != "Operator,EnvironmentOwner:Production" || time.Until(s.ExpiresAt) > 2*time.Hour {
		t.Fatalf("session: %+v", s)
	}
	var who api.Whoami
	if err := json.Unmarshal(p.must("GET", "/api/v1/whoami", s.Token, nil, http.StatusOK).body, &who); err != nil || who.Subject != "dana" {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	again := p.must("POST", "/api/v1/session", "", body, http.StatusUnauthorized)
	if !strings.Contains(string(again.body), "was used already") {
		t.Fatalf("second use: %s", again.body)
	}
	p.must("GET", "/api/v1/whoami", ticket, nil, http.StatusUnauthorized)
	if strings.Contains(string(p.stderr.Bytes()), ticket) || strings.Contains(string(p.stderr.Bytes()), s.Token) {
		t.Error("the server's log holds the ticket or the session token")
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--subject", "dana", "--role", "Admin"}, "--url, --subject and --role are required"},
		{[]string{"--url", "ftp://m.example.com", "--subject", "dana", "--role", "Admin"}, "https://host[:port]"},
		{[]string{"--url", "https://m.example.com/ui", "--subject", "dana", "--role", "Admin"}, "served at /"},
		{[]string{"--url", p.URL, "--subject", "dana", "--role", "Root"}, "unknown role"},
		{[]string{"--url", p.URL, "--subject", "dana", "--role", "Admin", "--ttl", "48h"}, "at most 24h"},
	} {
		if r := d.run(append([]string{"login-link"}, bad.args...)...); r.code == 0 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("manager login-link %v: exit %d, stderr %q; want a failure saying %q", bad.args, r.code, r.stderr, bad.want)
		}
	}
	noSecret := *d
	noSecret.secret = nil
	if r := noSecret.run("login-link", "--url", p.URL, "--subject", "dana", "--role", "Admin"); r.code == 0 || !strings.Contains(r.stderr, "SLIPWAY_MANAGER_JWT_SECRET") {
		t.Errorf("manager login-link without a secret: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestDeploymentWaitingReasons runs deployments on the workload fleet and reads what each waits
// for through the API as the engine moves them: a Canary stage's evaluation period (and the next
// stage's cluster waiting for it), a deployment queued behind it (one at a time), the Canary
// paused, then cancelled, and the queued one admitted and waiting for a Production approval.
func TestDeploymentWaitingReasons(t *testing.T) {
	t.Parallel()
	f := fleet(t, 2)
	d := newDeployment(t, "sqlite")
	p := d.serve("--insecure-http", "--max-concurrent-deployments=1", "--approval-environments=Production",
		"--operator-health-interval=2s", "--install-timeout=2m")
	op := uniqueName("wait")
	dev1, dev2, prod := op+"-dev-1", op+"-dev-2", op+"-prod"
	registerCluster(t, p, dev1, "Dev", f.Servers[0].Kubeconfig)
	registerCluster(t, p, dev2, "Dev", f.Servers[1].Kubeconfig)
	registerCluster(t, p, prod, "Production", f.Servers[1].Kubeconfig)
	registerOperator(t, p, op, op, operatorRepo(t).URL)
	olga := d.token("olga", auth.Operator)

	canary := postDeployment(t, p, olga, fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": [%q, %q], "strategy": "Canary",
		"canaryConfig": {"stages": [50, 100], "evaluationPeriod": "PT10M"}}`, op, dev1, dev2))
	dep := awaitWaiting(t, p, canary.ID, api.WaitEvaluation, 3*time.Minute)
	if !regexp.MustCompile(`^evaluation period, (9 m( \d+ s)?|10 m) left$`).MatchString(dep.Waiting.Message) || dep.StageStartedAt == nil ||
		dep.Waiting.Until == nil || !dep.Waiting.Until.Equal(dep.StageStartedAt.Add(10*time.Minute)) {
		t.Fatalf("the evaluation period: %+v (stage started %v)", dep.Waiting, dep.StageStartedAt)
	}
	clusters := map[string]string{}
	for _, c := range dep.Clusters {
		clusters[c.Name] = c.Waiting
	}
	if clusters[dev1] != dep.Waiting.Message || clusters[dev2] != "waiting for stage 1 ("+dep.Waiting.Message+")" {
		t.Fatalf("clusters waiting: %v", clusters)
	}

	queued := postDeployment(t, p, olga, fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": [%q], "strategy": "Direct"}`, op, prod))
	q := awaitWaiting(t, p, queued.ID, api.WaitQueued, time.Minute)
	if q.Status != "Queued" || q.Waiting.Message != "queued behind 1 deployment (1 running, 0 queued before it)" || q.Clusters[0].Waiting != q.Waiting.Message {
		t.Fatalf("queued: %s %+v", q.Status, q.Waiting)
	}

	var paused api.Deployment
	if err := json.Unmarshal(p.must("POST", "/api/v1/deployments/"+canary.ID+"/pause", olga, []byte(`{"reason": "checking"}`), http.StatusAccepted).body, &paused); err != nil {
		t.Fatal(err)
	}
	if paused.Waiting == nil || paused.Waiting.Reason != api.WaitPaused || paused.Waiting.Message != "paused by olga: checking" {
		t.Fatalf("paused: %+v", paused.Waiting)
	}
	var list api.DeploymentList
	if err := json.Unmarshal(p.must("GET", "/api/v1/deployments?active=true", d.admin(), nil, http.StatusOK).body, &list); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, item := range list.Items {
		if item.Waiting != nil {
			reasons[item.ID] = item.Waiting.Reason
		}
	}
	if reasons[canary.ID] != api.WaitPaused || reasons[queued.ID] != api.WaitQueued {
		t.Fatalf("the list's reasons: %v", reasons)
	}

	p.must("DELETE", "/api/v1/deployments/"+canary.ID, olga, nil, http.StatusAccepted)
	a := awaitWaiting(t, p, queued.ID, api.WaitApproval, 2*time.Minute)
	if a.Status != "WaitingApproval" || a.Waiting.Role != "EnvironmentOwner:Production" || a.Waiting.Until == nil ||
		a.Waiting.Message != "approval by an EnvironmentOwner of Production (or an Admin)" {
		t.Fatalf("waiting for approval: %s %+v", a.Status, a.Waiting)
	}
	p.must("DELETE", "/api/v1/deployments/"+queued.ID, olga, nil, http.StatusAccepted)
	waitDeployment(t, p, canary.ID, "Cancelled", time.Minute)
}

// awaitWaiting polls the deployment until it waits for reason (within timeout) and returns it.
func awaitWaiting(t *testing.T, p *proc, id, reason string, timeout time.Duration) api.Deployment {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		dep := getDeployment(t, p, id)
		if dep.Waiting != nil && dep.Waiting.Reason == reason {
			return dep
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment %s does not wait for %s: %s (%s), waiting %+v\nevents:\n%s", id, reason, dep.Status, dep.Reason,
				dep.Waiting, eventText(deploymentEvents(t, p, id)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
