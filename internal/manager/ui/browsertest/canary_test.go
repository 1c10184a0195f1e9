//go:build browser || e2e

package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// evaluationPeriod is the Canary's hold per stage, typed into the form: long enough to watch a
// stage and pause it, short enough for make test (manager serve never shortens a hold).
const evaluationPeriod = "PT20S"

// confirm clicks the button testID and confirms its dialog, typing reason when it is not empty.
func (b *tab) confirm(testID, reason string) {
	b.t.Helper()
	b.click(sel(testID))
	b.visible(`[role="dialog"]`)
	if reason != "" {
		b.fill(`[role="dialog"] textarea`, reason)
	}
	b.click(sel(testID + "-confirm"))
	b.gone(`[role="dialog"]`)
}

var deploymentPath = regexp.MustCompile(`^/deployments/([0-9a-f-]{36})$`)

// TestCanary_FromTheFormToRollback is the cockpit's story. alice plans a Canary of 1.1.0 over
// the three environments in the New deployment form: the dry-run plan (three stages, the
// approvals, the compatible CRD report per cluster) shows before anything is stored. She deploys
// it and watches its page, never reloaded, while it waits for approval by an Admin; her own
// request offers her no approval, and the Viewer's session is refused one by the API. bob
// approves both approvals from his inbox, where the CRD report and 1.1.0's migration note show
// inline. alice's page follows it live to the first stage's evaluation period, with the waiting
// reason; she pauses and resumes it, sees it complete, and rolls it back: every cluster runs
// 1.0.0 again. Screenshots: the Approvals inbox and the live Canary.
func TestCanary_FromTheFormToRollback(t *testing.T) {
	m := manager(t)
	alice := newTab(t, m)
	alice.signIn(managertest.Alice)
	alice.click(sel("nav-deployments"))
	alice.click(sel("new-deployment"))
	alice.waitURL(`^/deployments/new`)

	alice.choose(sel("field-operator"), m.Operator)
	alice.choose(sel("field-version"), managertest.CompatibleVersion)
	alice.click(sel("target-by-environments"))
	for _, env := range []string{"Dev", "Staging", "Production"} {
		alice.click(sel("target-environment-" + env))
	}
	alice.click(sel("strategy-Canary"))
	alice.fill(sel("field-canaryConfig.evaluationPeriod"), evaluationPeriod)
	before := deploymentCount(t, m)
	alice.click(sel("plan-button"))
	checkPlan(t, alice)
	if after := deploymentCount(t, m); after != before {
		t.Fatalf("the dry run stored a deployment: %d before, %d after", before, after)
	}

	alice.click(sel("submit"))
	path := alice.waitURL(deploymentPath.String())
	id := deploymentPath.FindStringSubmatch(path)[1]
	status := sel("deployment-status")
	alice.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__slipwayNotReloaded = true`))
	alice.waitAttr(`[data-testid="waiting"]`, "data-reason", "approval", waitTimeout)
	alice.waitText(sel("waiting"), "approval by an Admin")
	alice.visible(sel("approval-not-yours")) // nobody approves their own request

	pending := m.Approvals(t, id, "pending")
	vera := newTab(t, m)
	vera.signIn(managertest.Vera)
	if got := vera.apiFromPage("POST", "/api/v1/approvals/"+pending[0].ID+"/approve", `{"comment": "a viewer tries"}`); !strings.HasPrefix(got, "403 ") {
		t.Errorf("the Viewer's session approving: %s, want 403", got)
	}

	approveInInbox(t, m, id, len(pending))

	// alice's page, never reloaded, follows it: the first stage's evaluation period (the status
	// is Deploying until the last stage's hold, which is Validating).
	alice.waitAttr(`[data-testid="waiting"]`, "data-reason", "evaluationPeriod", 2*time.Minute)
	alice.waitText(sel("waiting"), "evaluation period")
	alice.waitText(`[data-testid="timeline-cell"][data-cluster="dev-1"] [data-testid="cluster-waiting"]`, "evaluation period")
	// A later stage's cluster: the manager's own "waiting for stage 1 (…)", said once.
	if w := alice.waitText(`[data-testid="timeline-cell"][data-cluster="dev-2"] [data-testid="cluster-waiting"]`, "stage 1"); !strings.HasPrefix(w, "waiting for stage 1 (evaluation period") {
		t.Errorf("dev-2 waits %q: want it to start with \"waiting for stage 1 (evaluation period\", the word once", w)
	}
	alice.waitText(sel("deployment-stage"), "1 of 3")
	alice.screenshot("canary-live.png")

	alice.confirm("action-pause", "holding it for the browser test")
	alice.waitAttr(status, "data-paused", "true", waitTimeout)
	if d := m.Deployment(t, id); !d.Paused || d.PausedBy != managertest.Alice || d.PauseReason != "holding it for the browser test" {
		t.Fatalf("after Pause: paused %v by %q (%q)", d.Paused, d.PausedBy, d.PauseReason)
	}
	alice.confirm("action-resume", "")
	alice.waitAttr(status, "data-paused", "false", waitTimeout)
	alice.waitText(sel("deployment-stage"), "3 of 3")
	alice.waitAttr(status, "data-status", "Completed", 3*time.Minute)
	for _, c := range m.Deployment(t, id).Clusters {
		cell := `[data-testid="timeline-cell"][data-cluster="` + c.Name + `"]`
		alice.waitAttr(cell, "data-status", "healthy", waitTimeout)
		rev := alice.text(cell + ` [data-testid="cell-revision"]`)
		if c.HelmRevision != c.PreviousRevision+1 || rev != strconv.Itoa(c.HelmRevision) {
			t.Errorf("%s shows Helm revision %q; the manager says %d after %d", c.Name, rev, c.HelmRevision, c.PreviousRevision)
		}
	}

	alice.confirm("action-rollback", "the browser test rolls it back")
	alice.waitAttr(status, "data-status", "RolledBack", 3*time.Minute)
	if !get(alice, "read the mark", chromedp.Evaluate[bool](`window.__slipwayNotReloaded === true`)) {
		t.Fatal("the deployment page was reloaded: it must follow the deployment live")
	}
	m.WaitStatus(t, id, "RolledBack", time.Minute)
	waitFleetVersion(t, m, managertest.SeedVersion)
}

// checkPlan checks the dry run's plan on the form: three stages (dev-1; dev-2; staging-1 and
// prod-1), the versionUpgrade and production approvals, and no cluster's CRD report breaking.
func checkPlan(t *testing.T, b *tab) {
	t.Helper()
	b.visible(sel("plan"))
	if n := b.count(sel("plan-stage")); n != 3 {
		t.Errorf("the plan has %d stages, want 3", n)
	}
	stages := get(b, "read the stages", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="plan-stage"]')].map((s) => s.innerText)`))
	for i, want := range [][]string{{"dev-1"}, {"dev-2"}, {"staging-1", "prod-1"}} {
		for _, c := range want {
			if i < len(stages) && !strings.Contains(stages[i], c) {
				t.Errorf("plan stage %d %q lacks %s", i+1, stages[i], c)
			}
		}
	}
	kinds := get(b, "read the approvals", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="plan-approval"]')].map((a) => a.dataset.kind)`))
	if strings.Join(kinds, ",") != "versionUpgrade,production" && strings.Join(kinds, ",") != "production,versionUpgrade" {
		t.Errorf("the plan's approvals are %v, want versionUpgrade and production", kinds)
	}
	crds := get(b, "read the CRD report", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="plan-crd"]')].map((c) => c.closest('[data-testid="plan-cluster"]').dataset.cluster + ' ' + c.dataset.crd + ' ' + c.dataset.status)`))
	if len(crds) != 4 {
		t.Errorf("the plan's CRD report has %d entries, want one per cluster: %v", len(crds), crds)
	}
	for _, c := range crds {
		// compatible; unchanged where an earlier run of the test binary left 1.1.0's CRD (a
		// rollback keeps CRDs).
		if !strings.HasSuffix(c, managertest.WidgetCRD+" compatible") && !strings.HasSuffix(c, managertest.WidgetCRD+" unchanged") {
			t.Errorf("CRD report %q: want %s compatible (or unchanged)", c, managertest.WidgetCRD)
		}
	}
	if b.count(sel("plan-would-fail")) != 0 {
		t.Errorf("the plan says it would fail: %s", b.text(sel("plan-would-fail")))
	}
}

// approveInInbox signs bob in, finds the deployment's n approvals in his inbox with its CRD
// report and 1.1.0's migration note, screenshots it, and approves each with a comment.
func approveInInbox(t *testing.T, m *managertest.Manager, id string, n int) {
	t.Helper()
	bob := newTab(t, m)
	bob.signIn(managertest.Bob)
	bob.click(sel("nav-approvals"))
	group := `[data-testid="approvals-mine"] [data-testid="approval-group"][data-deployment-id="` + id + `"]`
	row := group + ` [data-testid="approval-row"]`
	bob.visible(row)
	bob.visible(group + ` [data-testid="crd-report"]`)
	bob.waitText(group+` [data-testid="migration-note"]`, "spec.replicas")
	// The note is markdown, shown formatted: `spec.replicas` as code, **yellow** in bold.
	bob.waitText(group+` [data-testid="migration-note"] code`, "spec.replicas")
	bob.waitText(group+` [data-testid="migration-note"] strong`, "yellow")
	if got := bob.count(row); got != n {
		t.Fatalf("bob's inbox has %d approvals of the deployment, want %d", got, n)
	}
	bob.screenshot("approvals.png")
	for i := range n {
		kind := get(bob, "read the approval", chromedp.AttributeValue(chromedp.CSS(row), "data-kind"))
		bob.click(row + ` [data-testid="approval-approve"]`)
		bob.visible(`[role="dialog"]`)
		bob.fill(`[role="dialog"] textarea`, fmt.Sprintf("approved by the browser test (%d of %d)", i+1, n))
		bob.click(sel("approval-approve-confirm"))
		bob.gone(`[role="dialog"]`)
		t.Logf("bob approved %s", kind.Value)
		want := n - i - 1
		get(bob, "wait for the inbox", chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll(%q).length === %d`, row, want),
			chromedp.WithPollingTimeout(waitTimeout)))
	}
	for _, a := range m.Approvals(t, id, "approved") {
		if len(a.Decisions) != 1 || a.Decisions[0].Actor != managertest.Bob {
			t.Errorf("approval %s (%s): decisions %+v, want bob's", a.ID, a.Kind, a.Decisions)
		}
	}
}

// deploymentCount is how many deployments the manager has stored.
func deploymentCount(t *testing.T, m *managertest.Manager) int {
	t.Helper()
	var list api.DeploymentList
	m.Must(t, "GET", "/api/v1/deployments?limit=1000", managertest.Alice, nil, http.StatusOK).JSON(t, &list)
	return len(list.Items)
}

// waitFleetVersion waits (a minute at most) until GET /api/v1/fleet shows the operator at
// version on every cluster.
func waitFleetVersion(t *testing.T, m *managertest.Manager, version string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var fleet struct {
			Cells []struct{ Operator, Cluster, Version string }
		}
		r := m.Must(t, "GET", "/api/v1/fleet", managertest.Alice, nil, http.StatusOK)
		if err := json.Unmarshal(r.Body, &fleet); err != nil {
			t.Fatal(err)
		}
		at := 0
		for _, c := range fleet.Cells {
			if c.Operator == m.Operator && c.Version == version {
				at++
			}
		}
		if at == len(m.Clusters) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet does not show %s %s on every cluster: %s", m.Operator, version, r.Body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
