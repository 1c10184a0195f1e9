//go:build browser || e2e

package browsertest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// The deployment page's other buttons in the real browser: Reject (from the Approvals inbox),
// Cancel and BlueGreen's Switch, each confirmed in its dialog, the page following the deployment
// live, the API agreeing. Each deployment targets the Dev clusters alone and holds briefly, and
// each test leaves the shared clusters on the seed version (restoreSeed).

// markPage marks the page, so notReloaded can tell that it was never loaded again.
func (b *tab) markPage() {
	b.t.Helper()
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__slipwayNotReloaded = true`))
}

// notReloaded fails the test when the page marked by markPage was loaded again.
func (b *tab) notReloaded() {
	b.t.Helper()
	if !get(b, "read the mark", chromedp.Evaluate[bool](`window.__slipwayNotReloaded === true`)) {
		b.t.Fatal("the deployment page was reloaded: it must follow the deployment live")
	}
}

// openDeployment opens deployment id's page once its live stream is open, and marks it.
func (b *tab) openDeployment(id string) {
	b.t.Helper()
	b.open("/deployments/"+id, sel("deployment-status"))
	b.visible(`[data-testid="stream-state"][data-state="open"]`)
	b.markPage()
}

// actions are the deployment action buttons on the page (pause, cancel, …), in order.
func (b *tab) actions() []string {
	b.t.Helper()
	return get(b, "list the actions", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid^="action-"]')].map((e) => e.dataset.testid.slice('action-'.length))`))
}

// event waits until the page's event log shows an event of type whose message contains want.
func (b *tab) event(typ, want string) {
	b.t.Helper()
	b.waitText(`[data-testid="event-log"] [data-testid="event-row"][data-type="`+typ+`"]`, want)
}

// stage is the selector of the stage timeline's stage i (from 0).
func stage(i int) string {
	return `[data-testid="timeline-stage"][data-stage="` + strconv.Itoa(i) + `"]`
}

// cell is the selector of cluster's cell in the stage timeline.
func cell(cluster string) string {
	return `[data-testid="timeline-cell"][data-cluster="` + cluster + `"]`
}

// restoreSeed, when deployment id still moves or left a cluster on its version, rolls it back as
// alice and waits until the fleet shows the seed version on every cluster again: the package's
// tests share the manager and its clusters. Tests register it as a cleanup right after
// deploying, so a failed test restores them too.
func restoreSeed(t *testing.T, m *managertest.Manager, id string) {
	t.Helper()
	d := m.Deployment(t, id)
	finished := slices.Contains([]string{"Completed", "RolledBack", "Failed", "Cancelled"}, d.Status)
	installed := slices.ContainsFunc(d.Clusters, func(c api.DeploymentCluster) bool {
		return c.HelmRevision > 0 && c.Status != "rolledBack" && c.Status != "skipped"
	})
	if d.Status == "RolledBack" || (finished && !installed) {
		return
	}
	if d.Status != "RollingBack" && !d.RollbackRequested {
		m.Must(t, "POST", "/api/v1/deployments/"+id+"/rollback", managertest.Alice,
			map[string]string{"reason": "the browser test restores the seed version"}, http.StatusAccepted)
	}
	// WaitStatus would stop at the Cancelled or Completed it starts from.
	d = m.WaitFor(t, id, "the rollback's end", 3*time.Minute, func(d api.Deployment) bool {
		return d.Status == "RolledBack" || d.Status == "Failed"
	})
	if d.Status != "RolledBack" {
		t.Fatalf("restoring the seed version: deployment %s is %s (%s), want RolledBack", id, d.Status, d.Reason)
	}
	waitFleetVersion(t, m, managertest.SeedVersion)
}

// TestActions_RejectFromTheInbox: alice asks for 1.1.0 on dev-1 and watches its page, which
// waits for approval by an Admin. bob rejects it from his Approvals inbox: the dialog refuses
// to reject without a reason, then takes his. alice's page, never reloaded, shows the deployment
// Failed with bob's rejection as its reason, the approval rejected with his comment, nothing
// waited for and no action left (nothing was installed); the inbox no longer lists it, and the
// API says the same.
func TestActions_RejectFromTheInbox(t *testing.T) {
	m := manager(t)
	dep := m.Deploy(t, managertest.Alice, map[string]any{"operator": m.Operator, "version": managertest.CompatibleVersion,
		"clusters": []string{"dev-1"}, "strategy": "Direct"})
	t.Cleanup(func() { restoreSeed(t, m, dep.ID) })

	alice := newTab(t, m)
	alice.signIn(managertest.Alice)
	alice.openDeployment(dep.ID)
	alice.waitAttr(sel("waiting"), "data-reason", "approval", waitTimeout)
	alice.visible(`[data-testid="deployment-approval"][data-status="pending"] [data-testid="approval-not-yours"]`)

	const why = "1.1.0 waits for the Widget migration (rejected by the browser test)"
	bob := newTab(t, m)
	bob.signIn(managertest.Bob)
	bob.click(sel("nav-approvals"))
	row := `[data-testid="approvals-mine"] [data-testid="approval-row"][data-deployment-id="` + dep.ID + `"]`
	bob.visible(row)
	if n := bob.count(row); n != 1 {
		t.Fatalf("bob's inbox lists %d approvals of the deployment, want 1 (versionUpgrade)", n)
	}
	bob.click(row + ` [data-testid="approval-reject"]`)
	bob.visible(`[role="dialog"]`)
	bob.click(sel("approval-reject-confirm"))
	bob.waitText(`[role="dialog"] [role="alert"]`, "required")
	if got := m.Approvals(t, dep.ID, "pending"); len(got) != 1 {
		t.Fatalf("a rejection without a reason was sent: %d approvals pending, want 1", len(got))
	}
	bob.fill(`[role="dialog"] textarea`, why)
	bob.click(sel("approval-reject-confirm"))
	bob.gone(`[role="dialog"]`)
	bob.gone(row)

	status := sel("deployment-status")
	alice.waitAttr(status, "data-status", "Failed", waitTimeout)
	alice.waitText(sel("deployment-reason"), "rejected by "+managertest.Bob+": "+why)
	approval := `[data-testid="deployment-approval"][data-status="rejected"]`
	alice.waitText(approval+` [data-testid="approval-decisions"]`, "rejected by "+managertest.Bob)
	alice.waitText(approval+` [data-testid="approval-decisions"]`, why)
	alice.event("status", "WaitingApproval → Failed")
	alice.event("status", "rejected by "+managertest.Bob)
	alice.gone(sel("waiting"))
	alice.gone(sel("approval-not-yours"))
	if got := alice.actions(); len(got) != 0 {
		t.Errorf("a rejected deployment that installed nothing offers %v", got)
	}
	alice.notReloaded()

	d := m.Deployment(t, dep.ID)
	if d.Status != "Failed" || !strings.Contains(d.Reason, "rejected by "+managertest.Bob+": "+why) {
		t.Errorf("the API says %s (%q), want Failed, rejected by bob with his reason", d.Status, d.Reason)
	}
	if d.Clusters[0].HelmRevision != 0 {
		t.Errorf("the rejected deployment installed revision %d on dev-1", d.Clusters[0].HelmRevision)
	}
	rejected := m.Approvals(t, dep.ID, "rejected")
	if len(rejected) != 1 || len(rejected[0].Decisions) != 1 {
		t.Fatalf("rejected approvals %+v, want one with one decision", rejected)
	}
	if dec := rejected[0].Decisions[0]; dec.Actor != managertest.Bob || dec.Decision != "reject" || dec.Comment != why {
		t.Errorf("the decision is %+v, want bob's reject with %q", dec, why)
	}
}

// TestActions_CancelARunningRolling: otto (an Operator) asks for a Rolling deployment of 1.1.0
// over dev-1 and dev-2, a long validation period each; bob approves it. During dev-1's validation
// otto's page offers Pause and Cancel (no Switch, no Roll back for his role); he cancels it and
// confirms. His page, never reloaded, shows it Cancelled: dev-1 keeps 1.1.0, dev-2 never started
// (skipped), the reason says to roll back to undo it, and no action is left for him; the API
// agrees. alice then rolls it back (restoreSeed).
func TestActions_CancelARunningRolling(t *testing.T) {
	m := manager(t)
	dep := m.Deploy(t, managertest.Otto, map[string]any{"operator": m.Operator, "version": managertest.CompatibleVersion,
		"clusters": []string{"dev-1", "dev-2"}, "strategy": "Rolling", "rollingConfig": map[string]any{"validationPeriod": "PT10M"}})
	t.Cleanup(func() { restoreSeed(t, m, dep.ID) })
	m.ApproveAll(t, dep.ID, managertest.Bob)

	otto := newTab(t, m)
	otto.signIn(managertest.Otto)
	otto.openDeployment(dep.ID)
	otto.waitAttr(sel("waiting"), "data-reason", "evaluationPeriod", 2*time.Minute)
	otto.waitText(sel("waiting"), "validation period")
	otto.waitAttr(cell("dev-1"), "data-status", "validating", waitTimeout)
	otto.waitText(cell("dev-2")+` [data-testid="cluster-waiting"]`, "waiting for stage 1")
	if got := strings.Join(otto.actions(), ","); got != "pause,cancel" {
		t.Errorf("otto's actions during the validation are %s, want pause,cancel", got)
	}

	otto.confirm("action-cancel", "")
	status := sel("deployment-status")
	otto.waitAttr(status, "data-status", "Cancelled", waitTimeout)
	otto.waitAttr(cell("dev-2"), "data-status", "skipped", waitTimeout)
	otto.waitText(sel("deployment-reason"), "cancelled: 1 of 2 clusters run "+managertest.CompatibleVersion+" (roll back to undo)")
	// The log ends with the cancel, and the stage dev-1 was installed in was stopped, not "not
	// reached"; dev-1 no longer shows a validation under way.
	otto.event("cancel.requested", "cancel requested by "+managertest.Otto)
	otto.event("status", "Deploying → Cancelled")
	otto.waitAttr(stage(0), "data-state", "stopped", waitTimeout)
	otto.waitAttr(stage(1), "data-state", "skipped", waitTimeout)
	otto.waitText(cell("dev-1")+` [data-testid="cell-status"]`, "stopped")
	if rev := otto.text(cell("dev-1") + ` [data-testid="cell-revision"]`); rev == "—" {
		t.Errorf("dev-1 shows no Helm revision after the cancel, though it runs %s", managertest.CompatibleVersion)
	}
	otto.gone(sel("waiting"))
	if got := otto.actions(); len(got) != 0 {
		t.Errorf("otto is offered %v on the cancelled deployment (an Operator may not roll back)", got)
	}
	otto.notReloaded()
	d := m.Deployment(t, dep.ID)
	byName := map[string]api.DeploymentCluster{}
	for _, c := range d.Clusters {
		byName[c.Name] = c
	}
	if d.Status != "Cancelled" || !d.CancelRequested {
		t.Errorf("the API says %s (cancelRequested %v), want Cancelled", d.Status, d.CancelRequested)
	}
	if c := byName["dev-1"]; c.HelmRevision == 0 || c.PreviousVersion != managertest.SeedVersion {
		t.Errorf("dev-1: revision %d over %q, want 1.1.0 installed over %s", c.HelmRevision, c.PreviousVersion, managertest.SeedVersion)
	}
	if c := byName["dev-2"]; c.Status != "skipped" || c.HelmRevision != 0 {
		t.Errorf("dev-2: %s with revision %d, want skipped and never installed", c.Status, c.HelmRevision)
	}
}

// TestActions_BlueGreenSwitch: alice asks for a BlueGreen deployment of 1.1.0 to dev-1 with
// autoSwitch off (green validated for 5 s); bob approves it. Her page shows it waiting for the
// switch, stage 2 of 2, with Switch to green among its actions; she switches and confirms. The
// page, never reloaded, follows it through the switch monitor to Completed: green took over,
// both stages done, no Switch any more. The API agrees: switched at alice's request, green in
// the operator's namespace + "-green", blue kept where it was. alice then rolls it back to blue
// (restoreSeed).
func TestActions_BlueGreenSwitch(t *testing.T) {
	m := manager(t)
	dep := m.Deploy(t, managertest.Alice, map[string]any{"operator": m.Operator, "version": managertest.CompatibleVersion,
		"clusters": []string{"dev-1"}, "strategy": "BlueGreen",
		"blueGreenConfig": map[string]any{"validationPeriod": "PT5S", "autoSwitch": false}})
	t.Cleanup(func() { restoreSeed(t, m, dep.ID) })
	m.ApproveAll(t, dep.ID, managertest.Bob)

	alice := newTab(t, m)
	alice.signIn(managertest.Alice)
	alice.openDeployment(dep.ID)
	alice.waitAttr(sel("waiting"), "data-reason", "switch", 2*time.Minute)
	alice.waitText(sel("waiting"), "switch to green")
	alice.waitText(sel("deployment-stage"), "2 of 2")
	alice.waitText(cell("dev-1")+` [data-testid="cluster-waiting"]`, "switch to green")
	alice.waitText(sel("timeline-switch"), "Waits for someone to switch")
	if got := strings.Join(alice.actions(), ","); got != "pause,switch,cancel,rollback" {
		t.Errorf("alice's actions while it waits for the switch are %s, want pause,switch,cancel,rollback", got)
	}
	if d := m.Deployment(t, dep.ID); d.SwitchRequested || d.SwitchedAt != nil {
		t.Fatalf("switched before the button was clicked: requested %v, at %v", d.SwitchRequested, d.SwitchedAt)
	}

	alice.confirm("action-switch", "")
	status := sel("deployment-status")
	alice.waitAttr(status, "data-status", "Completed", 2*time.Minute)
	alice.waitText(sel("timeline-switch"), "Green took over")
	alice.waitAttr(stage(0), "data-state", "done", waitTimeout)
	alice.waitAttr(stage(1), "data-state", "done", waitTimeout)
	alice.event("switch.requested", "requested by "+managertest.Alice)
	alice.event("cluster.switched", "switched to green")
	alice.event("status", "→ Completed")
	alice.waitAttr(cell("dev-1"), "data-status", "healthy", waitTimeout)
	alice.gone(sel("waiting"))
	if got := alice.actions(); !slices.Equal(got, []string{"rollback"}) {
		t.Errorf("alice's actions on the completed BlueGreen are %v, want [rollback]", got)
	}
	alice.notReloaded()

	d := m.Deployment(t, dep.ID)
	c := d.Clusters[0]
	green := m.Operator + "-green"
	if d.Status != "Completed" || d.SwitchedAt == nil {
		t.Errorf("the API says %s, switched at %v: want Completed and switched", d.Status, d.SwitchedAt)
	}
	if !slices.ContainsFunc(m.Events(t, dep.ID), func(e api.DeploymentEvent) bool {
		return e.Type == "switch.requested" && strings.Contains(e.Message, "requested by "+managertest.Alice)
	}) {
		t.Error("no switch.requested event by alice in the deployment's history")
	}
	if c.Namespace != green || c.BlueNamespace != m.Operator {
		t.Errorf("dev-1 runs green in %q, blue in %q: want %q and %q", c.Namespace, c.BlueNamespace, green, m.Operator)
	}
	if d.BlueDeleteAt == nil {
		t.Error("the API gives no time when blue is deleted (blueDeleteAt)")
	}
}
