package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// approvalsOf are the deployment's approvals once planning has decided: the ones it waits for,
// or none when it went on without waiting (it reached Deploying or beyond).
func (h *harness) approvalsOf(id string) []*store.Approval {
	h.t.Helper()
	d := h.wait(id, "planned", func(d *store.Deployment) bool {
		return d.Status != store.DeploymentQueued && d.Status != store.DeploymentPlanning
	})
	list, err := h.store.ApprovalList(context.Background(), &store.ApprovalListParams{DeploymentID: id, Limit: 10})
	if err != nil {
		h.t.Fatal(err)
	}
	if (d.Status == store.DeploymentWaitingApproval) != (len(list) > 0) {
		h.t.Fatalf("deployment %s is %s (%s) with %d approvals", id, d.Status, d.Reason, len(list))
	}
	return list
}

// kindsOf are the approvals' kinds, each with its role and reason: "kind role: reason".
func kindsOf(list []*store.Approval) []string {
	var out []string
	for _, a := range list {
		out = append(out, a.Kind+" "+a.RequiredRole+": "+a.Reason)
	}
	slices.Sort(out)
	return out
}

// TestApprovals_PlanningAsksEachKindPerEnvironment runs the design's approval types through
// planning (FR-OP-007) with the approval workflow off for Dev (FR-OP-003,
// --approval-environments=Staging,Production) and the default level, patch. A first install to
// Dev and Production asks the Production owner only; the patch upgrade 1.0.0 → 1.0.1, whose CRD
// change breaks, asks all three kinds (versionUpgrade and breakingCRD of an Admin, production of
// the Production owner), each naming the Production cluster and never the Dev one; the same
// upgrade to Dev alone asks nothing and goes ahead, a crd.breaking event saying why. Restarted
// with the workflow off for Production instead, a first install to Production asks nothing.
func TestApprovals_PlanningAsksEachKindPerEnvironment(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "ap-dev", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "ap-prod", Environment: store.EnvironmentProduction, Server: s[1]},
	}, func(c *Config) { c.Policy = approvals.Policy{Disabled: []store.Environment{store.EnvironmentDev}} })
	h.operator("apk", crdChart("1.0.0", "apwidgets", "ApWidget", charttest.Base), crdChart("1.0.1", "apwidgets", "ApWidget", charttest.Breaking))
	// One chart repository: each operator's versions are its own.
	h.operator("apd", crdChart("1.1.0", "apdwidgets", "ApdWidget", charttest.Base), crdChart("1.1.1", "apdwidgets", "ApdWidget", charttest.Breaking))
	h.start()
	const both = `"clusters": ["ap-dev", "ap-prod"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`

	first := h.submit(`{"operator": "apk", "version": "1.0.0", ` + both)
	want := []string{"production " + approvals.RoleProductionOwner + ": apk 1.0.0 to the Production clusters ap-prod"}
	if got := kindsOf(h.approvalsOf(first.ID)); !slices.Equal(got, want) {
		t.Fatalf("first install: approvals %q, want %q", got, want)
	}
	h.approveAll(first.ID)
	h.waitStatus(first.ID, store.DeploymentCompleted)

	upgrade := h.submit(`{"operator": "apk", "version": "1.0.1", ` + both)
	want = []string{
		"breakingCRD Admin: breaking changes to the CRDs apwidgets." + charttest.Group + " of apk 1.0.1",
		"production " + approvals.RoleProductionOwner + ": apk 1.0.1 to the Production clusters ap-prod",
		"versionUpgrade Admin: operator version upgrade of apk: 1.0.0 → 1.0.1 (patch upgrade) on ap-prod",
	}
	if got := kindsOf(h.approvalsOf(upgrade.ID)); !slices.Equal(got, want) {
		t.Fatalf("upgrade: approvals\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !h.hasEvent(upgrade.ID, "crd.breaking", "stored on ap-dev; no approval asked there: the approval workflow is off for Dev") {
		t.Errorf("no crd.breaking event saying why ap-dev asks nothing:\n%s", h.eventLog(upgrade.ID))
	}
	h.approveAll(upgrade.ID)
	h.waitStatus(upgrade.ID, store.DeploymentCompleted)

	// Dev alone: the workflow is off, nothing is asked of anyone.
	devFirst := h.submit(`{"operator": "apd", "version": "1.1.0", "clusters": ["ap-dev"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(devFirst.ID, store.DeploymentCompleted)
	devUpgrade := h.submit(`{"operator": "apd", "version": "1.1.1", "clusters": ["ap-dev"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	if got := h.approvalsOf(devUpgrade.ID); len(got) != 0 {
		t.Fatalf("Dev upgrade with the workflow off for Dev: approvals %q, want none", kindsOf(got))
	}
	h.waitStatus(devUpgrade.ID, store.DeploymentCompleted)
	if !h.hasEvent(devUpgrade.ID, "crd.breaking", "the approval workflow is off for Dev") || h.hasEvent(devUpgrade.ID, "status", "WaitingApproval") {
		t.Errorf("Dev upgrade: want a crd.breaking event naming the workflow off and no wait:\n%s", h.eventLog(devUpgrade.ID))
	}

	// The manager restarted with the workflow on for Dev and off for Production.
	h.eng.Stop()
	h.cfg.Policy = approvals.Policy{Disabled: []store.Environment{store.EnvironmentProduction}}
	h.eng = h.replica("replica-b")
	h.operator("apq", crdChart("1.2.0", "apqwidgets", "ApqWidget", charttest.Base))
	prod := h.submit(`{"operator": "apq", "version": "1.2.0", "clusters": ["ap-prod"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	if got := h.approvalsOf(prod.ID); len(got) != 0 {
		t.Fatalf("Production first install with the workflow off for Production: approvals %q, want none", kindsOf(got))
	}
	h.waitStatus(prod.ID, store.DeploymentCompleted)
}

// TestApprovals_DefaultPolicyAsksForEveryUpgrade: under the default policy (level patch, the
// workflow on everywhere) a patch upgrade on a Dev cluster, with a compatible CRD, waits for an
// Admin's versionUpgrade approval; the first install before it asked nothing.
func TestApprovals_DefaultPolicyAsksForEveryUpgrade(t *testing.T) {
	h := newHarness(t, []target{{Name: "ap-def", Environment: store.EnvironmentDev, Server: servers(t, 3)[2]}},
		func(c *Config) { c.Policy = approvals.Policy{} })
	h.operator("apu", crdChart("1.0.0", "apuwidgets", "ApuWidget", charttest.Base), crdChart("1.0.1", "apuwidgets", "ApuWidget", charttest.Compatible))
	h.start()
	first := h.submit(`{"operator": "apu", "version": "1.0.0", "clusters": ["ap-def"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	if got := h.approvalsOf(first.ID); len(got) != 0 {
		t.Fatalf("first install to Dev: approvals %q, want none", kindsOf(got))
	}
	h.waitStatus(first.ID, store.DeploymentCompleted)
	upgrade := h.submit(`{"operator": "apu", "version": "1.0.1", "clusters": ["ap-def"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	want := []string{"versionUpgrade Admin: operator version upgrade of apu: 1.0.0 → 1.0.1 (patch upgrade) on ap-def"}
	if got := kindsOf(h.approvalsOf(upgrade.ID)); !slices.Equal(got, want) {
		t.Fatalf("patch upgrade: approvals %q, want %q", got, want)
	}
	h.noInstalls(upgrade.ID)
	h.approveAll(upgrade.ID)
	h.waitStatus(upgrade.ID, store.DeploymentCompleted)
}

// hasEvent reports whether the deployment has an event of type typ whose message contains part.
func (h *harness) hasEvent(id, typ, part string) bool {
	h.t.Helper()
	for _, e := range h.events(id) {
		if e.Type == typ && strings.Contains(e.Message, part) {
			return true
		}
	}
	return false
}
