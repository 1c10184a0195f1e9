package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestPlanning_BreakingCRDWaitsForItsApproval: 1.0.0 → 1.0.1 breaks the operator's CRD on the
// cluster and nobody approved that change through /crds: the deployment asks a breakingCRD
// approval (Admin) and installs nothing until it is approved, then upgrades.
func TestPlanning_BreakingCRDWaitsForItsApproval(t *testing.T) {
	h := newHarness(t, []target{{Name: "crd-1", Environment: store.EnvironmentDev, Server: servers(t, 2)[1]}}, nil)
	h.operator("crdask", crdChart("1.0.0", "askwidgets", "AskWidget", charttest.Base), crdChart("1.0.1", "askwidgets", "AskWidget", charttest.Breaking))
	h.start()
	first := h.submit(`{"operator": "crdask", "version": "1.0.0", "clusters": ["crd-1"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)

	d := h.submit(`{"operator": "crdask", "version": "1.0.1", "clusters": ["crd-1"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.wait(d.ID, "waiting for approval", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentWaitingApproval || d.Status.Terminal()
	})
	list, err := h.store.ApprovalList(context.Background(), &store.ApprovalListParams{DeploymentID: d.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Kind != approvals.KindBreakingCRD || list[0].RequiredRole != approvals.RoleAdmin {
		t.Fatalf("approvals %+v, want one breakingCRD approval for an Admin", list)
	}
	if types := h.eventTypes(d.ID); !slices.Contains(types, "crd.breaking") || slices.Contains(types, "crd.approved") {
		t.Errorf("events %v: want crd.breaking and no crd.approved", types)
	}
	// Waiting: several engine polls pass and nothing is installed.
	time.Sleep(3 * approvalPoll / 2)
	h.noInstalls(d.ID)
	if rel, err := install.Status(context.Background(), h.admin["crd-1"], "crdask", "op-crdask"); err != nil || rel.ChartVersion != "1.0.0" {
		t.Fatalf("release while waiting: %+v (%v), want 1.0.0 still", rel, err)
	}
	h.approveAll(d.ID)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	if rel, err := install.Status(context.Background(), h.admin["crd-1"], "crdask", "op-crdask"); err != nil || rel.ChartVersion != "1.0.1" {
		t.Fatalf("release after the approval: %+v (%v), want 1.0.1", rel, err)
	}
}

// TestPlanning_ApprovedCRDChangeNeedsNoBreakingCRDApproval: the same breaking change, approved
// first as /crds/{name}/approve records it (from the 1.0.0 definition's digest to 1.0.1's), is
// deployed without a breakingCRD approval, and an event names who approved it.
func TestPlanning_ApprovedCRDChangeNeedsNoBreakingCRDApproval(t *testing.T) {
	h := newHarness(t, []target{{Name: "crd-2", Environment: store.EnvironmentDev, Server: servers(t, 2)[1]}}, nil)
	op := h.operator("crdok", crdChart("1.0.0", "okwidgets", "OkWidget", charttest.Base), crdChart("1.0.1", "okwidgets", "OkWidget", charttest.Breaking))
	h.start()
	first := h.submit(`{"operator": "crdok", "version": "1.0.0", "clusters": ["crd-2"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)

	const name = "okwidgets." + charttest.Group
	if _, err := h.store.CRDApprovalCreate(context.Background(), &store.CRDApprovalCreateParams{
		CRDName: name, FromDigest: h.crdDigest(op, "1.0.0", name), ToDigest: h.crdDigest(op, "1.0.1", name), ToVersion: "1.0.1",
		ApprovedBy: "carol", Reason: "objects migrated by hand", RequestID: "req-crd", Now: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	d := h.submit(`{"operator": "crdok", "version": "1.0.1", "clusters": ["crd-2"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	list, err := h.store.ApprovalList(context.Background(), &store.ApprovalListParams{DeploymentID: d.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("approvals %+v, want none: the CRD change was approved", list)
	}
	var approved string
	for _, e := range h.events(d.ID) {
		if e.Type == "crd.approved" {
			approved = e.Message
		}
		if e.Type == "crd.breaking" || strings.Contains(e.Message, "WaitingApproval") {
			t.Errorf("event %s: %s", e.Type, e.Message)
		}
	}
	if !strings.Contains(approved, name) || !strings.Contains(approved, "approved by carol") {
		t.Errorf("crd.approved event %q, want it to name the CRD and carol", approved)
	}
}

// crdDigest is the digest of CRD name as the operator's chart at version ships it, computed as
// the manager does when it stores the operator's CRD revisions.
func (h *harness) crdDigest(op *store.Operator, version, name string) string {
	h.t.Helper()
	ch, err := h.cfg.Charts.Fetch(context.Background(), operators.ChartRef{Repository: op.ChartRepository, Name: op.ChartName}, version)
	if err != nil {
		h.t.Fatal(err)
	}
	defs, err := operators.ExtractCRDs(ch.Chart)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, def := range defs {
		if def.Name == name {
			d, err := crds.Digest(def)
			if err != nil {
				h.t.Fatal(err)
			}
			return d
		}
	}
	h.t.Fatalf("%s %s ships no CRD %s", op.Name, version, name)
	return ""
}
