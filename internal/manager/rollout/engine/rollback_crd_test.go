package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestRollback_CRDWarningAfterBreakingUpgrade upgrades 1.0.0 to 2.0.0, whose Widget CRD breaks
// 1.0.0's (spec.count becomes a string), stores Widgets only the new schema accepts, and rolls
// back: a rollback.crdWarning names the CRD and exactly those objects, and neither the CRD (the
// newer schema stays) nor any custom resource is written by the rollback.
func TestRollback_CRDWarningAfterBreakingUpgrade(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.operator("crdw",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "2.0.0", charttest.Breaking))
	h.start()
	ctx := t.Context()
	admin := h.admin["dev-1"]
	dc, err := dynamic.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	restoreWidgetCRD(t, dc)
	first := h.submit(`{"operator": "crdw", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`)
	// The server's Widget CRD is shared with other tests: 1.0.0's may break the one stored now.
	if h.wait(first.ID, "approval or completion", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentWaitingApproval || d.Status.Terminal()
	}).Status == store.DeploymentWaitingApproval {
		h.approveAll(first.ID)
	}
	h.waitStatus(first.ID, store.DeploymentCompleted)
	old := createWidgets(t, admin, "op-crdw", 2)

	d := h.submit(`{"operator": "crdw", "version": "2.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`)
	h.approveAll(d.ID) // a major upgrade with a breaking CRD
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	var fresh []*unstructured.Unstructured
	for i := range 2 {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": charttest.Group + "/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("counted-%d", i), "namespace": "op-crdw"},
			"spec":     map[string]any{"size": int64(1), "color": "green", "count": "three", "tls": map[string]any{"secretName": "tls"}},
		}}
		created, err := dc.Resource(widgets).Namespace("op-crdw").Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a widget of the 2.0.0 schema: %v", err)
		}
		fresh = append(fresh, created)
	}
	crdBefore, err := dc.Resource(crdRes).Get(ctx, "widgets."+charttest.Group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := h.eng.Rollback(ctx, d.ID, "alice", "breaking"); err != nil {
		t.Fatal(err)
	}
	d = h.waitRolledBack(d.ID)
	var warnings []string
	for _, e := range h.events(d.ID) {
		if e.Type == "rollback.crdWarning" {
			warnings = append(warnings, e.Message)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("rollback.crdWarning events %q, want one\n%s", warnings, h.eventLog(d.ID))
	}
	w := warnings[0]
	for _, want := range []string{"2 of 4 widgets." + charttest.Group + " would not validate against 1.0.0's schema", "op-crdw/counted-0", "op-crdw/counted-1", "spec.count"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q does not say %q", w, want)
		}
	}
	if strings.Contains(w, "widget-0") || strings.Contains(w, "widget-1") {
		t.Errorf("warning %q names widgets the old schema accepts", w)
	}
	crdAfter, err := dc.Resource(crdRes).Get(ctx, "widgets."+charttest.Group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crdAfter.GetResourceVersion() != crdBefore.GetResourceVersion() {
		t.Errorf("the rollback wrote the Widget CRD (resourceVersion %s → %s)", crdBefore.GetResourceVersion(), crdAfter.GetResourceVersion())
	}
	versions, _, _ := unstructured.NestedSlice(crdAfter.Object, "spec", "versions")
	if len(versions) != 1 {
		t.Fatalf("CRD versions %v", versions)
	}
	typ, _, _ := unstructured.NestedString(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "count", "type")
	if typ != "string" {
		t.Errorf("spec.count is %q after the rollback, want the newer schema's string kept", typ)
	}
	assertWidgetsUnchanged(t, admin, "op-crdw", slices.Concat(old, fresh))
	rel, err := install.Status(ctx, admin, "crdw", "op-crdw")
	if err != nil || rel.ChartVersion != "1.0.0" {
		t.Fatalf("release %+v (%v), want 1.0.0 after the rollback", rel, err)
	}
}

var crdRes = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// restoreWidgetCRD puts the server's Widget CRD back as it is now when the test ends, without the
// test's objects: the CRD is shared with the other tests on the server, which would otherwise
// find 2.0.0's breaking schema stored (and need approvals).
func restoreWidgetCRD(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	orig, err := dc.Resource(crdRes).Get(ctx, "widgets."+charttest.Group, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dc.Resource(widgets).Namespace("op-crdw").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("removing the test's widgets: %v", err)
		}
		if orig == nil {
			if err := dc.Resource(crdRes).Delete(ctx, "widgets."+charttest.Group, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing the Widget CRD: %v", err)
			}
			return
		}
		cur, err := dc.Resource(crdRes).Get(ctx, "widgets."+charttest.Group, metav1.GetOptions{})
		if err != nil {
			t.Errorf("reading the Widget CRD: %v", err)
			return
		}
		cur.Object["spec"] = orig.Object["spec"]
		if _, err := dc.Resource(crdRes).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Errorf("restoring the Widget CRD: %v", err)
		}
	})
}
