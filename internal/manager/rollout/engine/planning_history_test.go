package engine

import (
	"context"
	"crypto/tls"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/notify/smtptest"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// recordHistory records in the schema history the CRDs each version of op ships, read from the
// versions' charts, as registration does.
func (h *harness) recordHistory(op *store.Operator, versions ...string) {
	h.t.Helper()
	ctx := context.Background()
	for _, v := range versions {
		ch, err := h.cfg.Charts.Fetch(ctx, operators.ChartRef{Repository: op.ChartRepository, Name: op.ChartName}, v)
		if err != nil {
			h.t.Fatal(err)
		}
		defs, err := operators.ExtractCRDs(ch.Chart)
		if err != nil {
			h.t.Fatal(err)
		}
		if err := crds.RecordVersion(ctx, h.store, &crds.VersionRecord{OperatorID: op.ID, Version: v, CRDs: defs, Now: time.Now()}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// shipped is the digest of what version of op ships of CRD name, by the schema history.
func (h *harness) shipped(op *store.Operator, version, name string) string {
	h.t.Helper()
	hist, err := crds.LoadHistory(context.Background(), h.store, op.ID, name)
	if err != nil {
		h.t.Fatal(err)
	}
	s := hist.At(version, name)
	switch {
	case s.Row != nil:
		return s.Row.Digest
	case s.Dropped:
		return crds.DroppedDigest
	}
	h.t.Fatalf("%s %s ships no %s", op.Name, version, name)
	return ""
}

// deployDirect submits a Direct deployment of version to cluster.
func (h *harness) deployDirect(op, version, cluster string) *store.Deployment {
	h.t.Helper()
	return h.submit(`{"operator": "` + op + `", "version": "` + version + `", "clusters": ["` + cluster + `"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
}

// waitingFor waits until d waits for approval and returns the kinds it asks for.
func (h *harness) waitingFor(id string) []*store.Approval {
	h.t.Helper()
	h.wait(id, "waiting for approval", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentWaitingApproval || d.Status.Terminal()
	})
	list, err := h.store.ApprovalList(context.Background(), &store.ApprovalListParams{DeploymentID: id, Limit: 10})
	if err != nil {
		h.t.Fatal(err)
	}
	return list
}

// cancel cancels a deployment and waits until it ends.
func (h *harness) cancel(id string) {
	h.t.Helper()
	if _, err := h.eng.Cancel(context.Background(), id, "alice"); err != nil {
		h.t.Fatal(err)
	}
	h.wait(id, "cancelled", func(d *store.Deployment) bool { return d.Status.Terminal() })
}

// TestPlanning_CRDHistoryByVersion runs an operator whose CRD goes A (1.0.0) → B (1.0.1, which
// allows more) → A again (1.0.2) → dropped (1.0.3) on one cluster that stores an object only B
// allows:
//   - 1.0.1 → 1.0.2 breaks the stored object: planning asks a breakingCRD approval, and the
//     approval and its mail carry A's migration note (given for 1.0.2; A is 1.0.0's revision);
//   - the change approved as POST /crds/{name}/approve records it for 1.0.2 (from B to A, where
//     the digest-ordered history said B) needs no approval;
//   - 1.0.3 drops the CRD while the cluster stores an object of it: breaking, an event names it;
//     approved (from A to "dropped"), it deploys without an approval.
func TestPlanning_CRDHistoryByVersion(t *testing.T) {
	smtp := smtptest.Start(t, smtptest.Options{})
	var h *harness
	h = newHarness(t, []target{{Name: "hist-1", Environment: store.EnvironmentDev, Server: servers(t, 2)[1]}}, func(c *Config) {
		n, err := notify.New(notify.Config{
			Sender:     &notify.Mailer{Addr: smtp.Addr, From: "slipway@example.com", Username: smtptest.User, Password: smtptest.Password, TLS: &tls.Config{RootCAs: smtptest.CertPool(t)}},
			BaseURL:    "https://slipway.example.com",
			Recipients: map[string][]string{"*": {"admins@example.com"}},
			Log:        slog.New(slog.DiscardHandler),
			OnResult:   func(r notify.Result) { h.eng.MailResult(r) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Stop)
		c.Notifier = n
	})
	const name = "hwidgets." + charttest.Group
	op := h.operator("hist",
		crdChart("1.0.0", "hwidgets", "HWidget", charttest.Base),
		crdChart("1.0.1", "hwidgets", "HWidget", charttest.Compatible),
		crdChart("1.0.2", "hwidgets", "HWidget", charttest.Base),
		crdChart("1.0.3", "hgadgets", "HGadget", charttest.Base))
	h.recordHistory(op, "1.0.0", "1.0.1", "1.0.2", "1.0.3")
	note := store.MigrationNote{Text: "Recolour **yellow** widgets before upgrading:\n\n    kubectl get hwidgets -A", URL: "https://docs.example.com/hwidgets/v2"}
	if err := crds.ApplyNotes(context.Background(), h.store, op.ID, "migrationNotes", []crds.VersionNote{{CRD: name, Version: "1.0.2", Note: note}}); err != nil {
		t.Fatal(err)
	}
	a, b := h.shipped(op, "1.0.0", name), h.shipped(op, "1.0.1", name)
	if got := h.shipped(op, "1.0.2", name); got != a || a == b || a != h.crdDigest(op, "1.0.2", name) {
		t.Fatalf("1.0.2 ships %s; 1.0.0 ships %s, 1.0.1 %s: want 1.0.2 to ship 1.0.0's", got, a, b)
	}
	if got := h.shipped(op, "1.0.3", name); got != crds.DroppedDigest {
		t.Fatalf("1.0.3 ships %s, want it dropped", got)
	}
	h.start()
	h.waitStatus(h.deployDirect("hist", "1.0.0", "hist-1").ID, store.DeploymentCompleted)
	h.waitStatus(h.deployDirect("hist", "1.0.1", "hist-1").ID, store.DeploymentCompleted)
	h.storeYellowWidget("hist-1")

	// B → A breaks the yellow widget: a breakingCRD approval with A's note, mailed with it.
	d := h.deployDirect("hist", "1.0.2", "hist-1")
	list := h.waitingFor(d.ID)
	if len(list) != 1 || list[0].Kind != approvals.KindBreakingCRD {
		t.Fatalf("approvals %+v, want one breakingCRD:\n%s", list, h.eventLog(d.ID))
	}
	notes, err := h.store.DeploymentMigrationNotesListMany(context.Background(), []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := notes[d.ID]; len(got) != 1 || got[0].CRDName != name || got[0].Version != "1.0.2" || got[0].Digest != a || got[0].Note != note {
		t.Fatalf("migration notes %+v, want A's note once", got)
	}
	m := smtp.Await(t, "approval mail", func(m smtptest.Message) bool { return m.Header.Get("X-Slipway-Approval-Id") == list[0].ID })
	for _, want := range []string{"Migration notes", name + " as 1.0.2 ships it (" + a + ")", "Guide: " + note.URL,
		"    Recolour **yellow** widgets before upgrading:", "        kubectl get hwidgets -A"} {
		if !strings.Contains(m.Body, want) {
			t.Errorf("mail body lacks %q:\n%s", want, m.Body)
		}
	}
	h.cancel(d.ID)

	// The change POST /crds/{name}/approve records for operator hist, version 1.0.2: B → A.
	h.approveCRD(name, b, a, "1.0.2")
	d = h.deployDirect("hist", "1.0.2", "hist-1")
	h.waitStatus(d.ID, store.DeploymentCompleted)
	if types := h.eventTypes(d.ID); !slices.Contains(types, "crd.approved") || slices.Contains(types, "crd.breaking") {
		t.Fatalf("events %v: want crd.approved and no crd.breaking", types)
	}

	// 1.0.3 drops the CRD while the cluster stores the yellow widget.
	d = h.deployDirect("hist", "1.0.3", "hist-1")
	list = h.waitingFor(d.ID)
	if len(list) != 1 || list[0].Kind != approvals.KindBreakingCRD || !strings.Contains(list[0].Reason, name) {
		t.Fatalf("approvals %+v, want one breakingCRD naming %s:\n%s", list, name, h.eventLog(d.ID))
	}
	var dropped string
	for _, e := range h.events(d.ID) {
		if e.Type == "crd.dropped" {
			dropped = e.Message
		}
	}
	if !strings.Contains(dropped, name) || !strings.Contains(dropped, "1 object of it") {
		t.Fatalf("crd.dropped event %q:\n%s", dropped, h.eventLog(d.ID))
	}
	h.cancel(d.ID)
	h.approveCRD(name, a, crds.DroppedDigest, "1.0.3")
	d = h.deployDirect("hist", "1.0.3", "hist-1")
	h.waitStatus(d.ID, store.DeploymentCompleted)
	if types := h.eventTypes(d.ID); !slices.Contains(types, "crd.approved") || slices.Contains(types, "crd.breaking") {
		t.Fatalf("events %v: want crd.approved and no crd.breaking", types)
	}
}

// approveCRD records an approved change of CRD name as POST /crds/{name}/approve does.
func (h *harness) approveCRD(name, from, to, version string) {
	h.t.Helper()
	if _, err := h.store.CRDApprovalCreate(context.Background(), &store.CRDApprovalCreateParams{
		CRDName: name, FromDigest: from, ToDigest: to, ToVersion: version, ApprovedBy: "carol", Reason: "checked", RequestID: "req-h", Now: time.Now(),
	}); err != nil {
		h.t.Fatal(err)
	}
}

// storeYellowWidget stores an HWidget whose colour only the Compatible schema allows.
func (h *harness) storeYellowWidget(cluster string) {
	h.t.Helper()
	dyn, err := dynamic.NewForConfig(h.admin[cluster])
	if err != nil {
		h.t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: charttest.Group, Version: "v1alpha1", Resource: "hwidgets"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": charttest.Group + "/v1alpha1", "kind": "HWidget",
		"metadata": map[string]any{"name": "sunny", "namespace": "default"},
		"spec":     map[string]any{"size": int64(3), "color": "yellow"},
	}}
	if _, err := dyn.Resource(gvr).Namespace("default").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		h.t.Fatal(err)
	}
}
