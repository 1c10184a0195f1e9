package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestRollback_StopsAtTheReplacedVersion is the case reported against the health loop: custom
// resources Ready before an upgrade turn Ready=False after it for a reason that is not the
// operator's (the same under every version), the upgrade is judged Unhealthy and rolled back, and
// the version it restores fails the same check. The rollback ends RolledBack saying the baseline
// is unhealthy (not "rollback failed"), and the health loop never rolls the deployment before it
// further back, though that one completed well within its bake window: an Unhealthy check of
// what a rollback restored is an alert (healthcheck.alert), not another rollback.
func TestRollback_StopsAtTheReplacedVersion(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	first := h.goodThenBad("base", "dev-1", func(f charttest.ChartFiles) charttest.ChartFiles { return f })
	admin := h.admin["dev-1"]
	crs := createWidgets(t, admin, "op-base", 4)
	t.Cleanup(func() { deleteWidgets(t, admin, crs) }) // the cluster is shared: other tests count every widget
	setWidgetsReady(t, admin, crs, "True", "Reconciled")

	d := h.submit(`{"operator": "base", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT30S"}}`)
	h.wait(d.ID, "validating", func(d *store.Deployment) bool { return d.Clusters[0].Status == store.ClusterValidating })
	setWidgetsReady(t, admin, crs, "False", "CredentialsExpired")

	d = h.waitStatus(d.ID, store.DeploymentRolledBack)
	if !strings.Contains(d.Reason, "baseline unhealthy on dev-1") {
		t.Errorf("reason %q, want it to say the baseline is unhealthy on dev-1", d.Reason)
	}
	if c := d.Clusters[0]; c.Status != store.ClusterRolledBack || !strings.Contains(c.Message, "by the same signals that failed 1.0.1 (crds)") {
		t.Errorf("cluster %s: %q, want RolledBack naming the signal that failed both versions", c.Status, c.Message)
	}
	if !slices.Contains(h.eventTypes(d.ID), "rollback.baselineUnhealthy") {
		t.Errorf("no rollback.baselineUnhealthy event:\n%s", h.eventLog(d.ID))
	}

	// The first deployment is live again and Unhealthy: the health loop alerts, it does not roll back.
	h.wait(first.ID, "an alert on the restored release", func(*store.Deployment) bool {
		return slices.Contains(h.eventTypes(first.ID), "healthcheck.alert")
	})
	var alert string
	for _, e := range h.events(first.ID) {
		if e.Type == "healthcheck.alert" {
			alert = e.Message
		}
	}
	if !strings.Contains(alert, "no automatic rollback: it is what a newer deployment restored on dev-1") {
		t.Errorf("alert %q, want it to say why there is no rollback", alert)
	}
	time.Sleep(3 * h.cfg.HealthInterval) // more failed checks: still no rollback
	got, err := h.store.DeploymentGetByID(context.Background(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.DeploymentCompleted || got.RollbackRequested || slices.Contains(h.eventTypes(first.ID), "rollback.requested") {
		t.Fatalf("the first deployment is %s (rollback requested %v): the health loop went past the replaced version:\n%s",
			got.Status, got.RollbackRequested, h.eventLog(first.ID))
	}
	rel, err := install.Status(context.Background(), admin, "base", "op-base")
	if err != nil || rel.ChartVersion != "1.0.0" {
		t.Fatalf("release %+v (%v), want 1.0.0 (the version the rolled-back deployment replaced)", rel, err)
	}
}

// setWidgetsReady writes each widget's Ready condition through /status, as its controller would,
// observed at its current generation.
func setWidgetsReady(t *testing.T, cfg *rest.Config, widgetsList []*unstructured.Unstructured, status, reason string) {
	t.Helper()
	ctx := context.Background()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range widgetsList {
		cur, err := dc.Resource(widgets).Namespace(w.GetNamespace()).Get(ctx, w.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gen := cur.GetGeneration()
		cur.Object["status"] = map[string]any{"observedGeneration": gen, "conditions": []any{map[string]any{
			"type": "Ready", "status": status, "reason": reason, "message": "set by the test", "observedGeneration": gen,
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}}
		if _, err := dc.Resource(widgets).Namespace(w.GetNamespace()).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status of %s: %v", w.GetName(), err)
		}
	}
}

func deleteWidgets(t *testing.T, cfg *rest.Config, list []*unstructured.Unstructured) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Error(err)
		return
	}
	for _, w := range list {
		if err := dc.Resource(widgets).Namespace(w.GetNamespace()).Delete(context.Background(), w.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting %s: %v", w.GetName(), err)
		}
	}
}

// TestRollback_AlertPastTheBakeWindow: a version whose pods restart once installed completes
// (its health checks skipped) with no bake window (bakeWindow PT0S): the health loop finds it
// Unhealthy three times in a row and alerts (healthcheck.alert naming the bake window), and the
// deployment stays Completed with its version running.
func TestRollback_AlertPastTheBakeWindow(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.goodThenBad("baked", "dev-1", restarting)
	d := h.submit(`{"operator": "baked", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Direct",
		"directConfig": {"skipHealthChecks": true}, "bakeWindow": "PT0S"}`)
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	if d.BakeWindow != 0 {
		t.Fatalf("bake window %s, want none", d.BakeWindow)
	}
	h.wait(d.ID, "an alert", func(*store.Deployment) bool { return slices.Contains(h.eventTypes(d.ID), "healthcheck.alert") })
	time.Sleep(3 * h.cfg.HealthInterval) // more failed checks: still no rollback
	got, err := h.store.DeploymentGetByID(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.DeploymentCompleted || slices.Contains(h.eventTypes(d.ID), "rollback.requested") {
		t.Fatalf("deployment %s past its bake window:\n%s", got.Status, h.eventLog(d.ID))
	}
	for _, e := range h.events(d.ID) {
		if e.Type == "healthcheck.alert" && !strings.Contains(e.Message, "no automatic rollback: its deployment has no bake window") {
			t.Errorf("alert %q, want it to say there is no bake window", e.Message)
		}
	}
	if rel, err := install.Status(context.Background(), h.admin["dev-1"], "baked", "op-baked"); err != nil || rel.ChartVersion != "1.0.1" {
		t.Fatalf("release %+v (%v), want 1.0.1 still running", rel, err)
	}
}
