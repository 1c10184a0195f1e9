package engine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

var widgets = schema.GroupVersionResource{Group: charttest.Group, Version: "v1alpha1", Resource: "widgets"}

// TestRollback_FailedUpgradeRestoresPreviousAndKeepsCustomResources upgrades to a version whose
// pods never become ready: the install fails, the deployment rolls back to the previous
// revision on its own, and every custom resource created before the upgrade is unchanged, byte
// for byte in spec (and not written at all: same resourceVersion); the CRD is kept.
func TestRollback_FailedUpgradeRestoresPreviousAndKeepsCustomResources(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.InstallTimeout = 15 * time.Second
	})
	h.goodThenBad("rb", "dev-1", unschedulable)

	crs := createWidgets(t, h.admin["dev-1"], "op-rb", 3)
	before := rollbackMetrics(t, "install", "rolledBack")
	d := h.submit(`{"operator": "rb", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT0S", "pauseBetweenClusters": "PT0S"}}`)
	d = h.waitStatus(d.ID, store.DeploymentRolledBack)
	if !strings.HasPrefix(d.RollbackReason, "install failed on dev-1") {
		t.Errorf("rollback reason %q, want the failed install", d.RollbackReason)
	}
	c := d.Clusters[0]
	if c.Status != store.ClusterRolledBack || c.PreviousRevision != 1 || c.PreviousVersion != "1.0.0" {
		t.Fatalf("cluster %+v, want rolled back to revision 1 (1.0.0)", c)
	}
	rel, err := install.Status(context.Background(), h.admin["dev-1"], "rb", "op-rb")
	if err != nil {
		t.Fatal(err)
	}
	if rel.ChartVersion != "1.0.0" || rel.Status != "deployed" || rel.Revision != 3 {
		t.Fatalf("release after the rollback: %+v, want 1.0.0 deployed as revision 3", rel)
	}
	assertWidgetsUnchanged(t, h.admin["dev-1"], "op-rb", crs)
	assertRollbackMetrics(t, before, "install", "rolledBack")
	if d.RollbackStartedAt == nil || d.RollbackFinishedAt == nil {
		t.Fatalf("rollback times not recorded: %+v", d)
	}
	t.Logf("rollback from trigger to RolledBack: %s", d.RollbackFinishedAt.Sub(*d.RollbackStartedAt).Round(time.Millisecond))
}

// TestRollback_AutomaticAfterFailedHealthChecks completes a version whose pods start restarting
// once installed (health checks skipped by the deployment, so it completes): the health loop
// finds it Unhealthy three times in a row and rolls the completed deployment back on its own.
func TestRollback_AutomaticAfterFailedHealthChecks(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	first := h.goodThenBad("auto", "dev-1", restarting)
	crs := createWidgets(t, h.admin["dev-1"], "op-auto", 2)

	d := h.submit(`{"operator": "auto", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Direct",
		"directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	d = h.wait(d.ID, "rolled back", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentRolledBack || d.Status == store.DeploymentFailed
	})
	if d.Status != store.DeploymentRolledBack || !strings.HasPrefix(d.RollbackReason, "health check: dev-1 failed 3 checks in a row") {
		t.Errorf("status %s, rollback reason %q: want RolledBack after 3 failed health checks", d.Status, d.RollbackReason)
	}
	rel, err := install.Status(context.Background(), h.admin["dev-1"], "auto", "op-auto")
	if err != nil {
		t.Fatal(err)
	}
	if rel.ChartVersion != "1.0.0" || rel.Status != "deployed" {
		t.Fatalf("release after the automatic rollback: %+v, want 1.0.0", rel)
	}
	assertWidgetsUnchanged(t, h.admin["dev-1"], "op-auto", crs)
	t.Logf("automatic rollback from trigger to RolledBack: %s", d.RollbackFinishedAt.Sub(*d.RollbackStartedAt).Round(time.Millisecond))

	// The first deployment is live again: the health loop checks it, and it is healthy.
	h.wait(first.ID, "healthy again", func(*store.Deployment) bool {
		recs, err := h.store.OperatorHealthList(context.Background(), &store.OperatorHealthListParams{OperatorName: "auto"})
		return err == nil && len(recs) == 1 && recs[0].DeploymentID == first.ID && recs[0].Health == "Healthy"
	})
	h.wait(first.ID, "the healthy gauge", func(*store.Deployment) bool {
		return metricValue(t, "slipway_manager_operators_healthy", nil) == 1 && metricValue(t, "slipway_manager_operators_unhealthy", nil) == 0
	})
}

// TestRollback_DuringValidation: a Rolling deployment of the restarting version is caught during
// its validation period and rolled back before it completes.
func TestRollback_DuringValidation(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.goodThenBad("val", "dev-1", restarting)
	d := h.submit(`{"operator": "val", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT30S"}}`)
	d = h.waitStatus(d.ID, store.DeploymentRolledBack)
	if !strings.HasPrefix(d.RollbackReason, "health check: dev-1 failed") {
		t.Errorf("rollback reason %q, want failed health checks", d.RollbackReason)
	}
	if !slices.Contains(h.eventTypes(d.ID), "healthcheck.failed") {
		t.Errorf("no healthcheck.failed event before the rollback: %v", h.eventTypes(d.ID))
	}
	if !slices.Contains(h.eventTypes(d.ID), "stage.validating") {
		t.Errorf("rolled back before its validation started: %v", h.eventTypes(d.ID))
	}
}

// createWidgets creates n Widgets in namespace (created when missing) and returns them as stored.
func createWidgets(t *testing.T, cfg *rest.Config, namespace string, n int) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for i := range n {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": charttest.Group + "/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("widget-%d", i), "namespace": namespace},
			"spec":     map[string]any{"size": int64(i + 1), "color": "blue"},
		}}
		created, err := dc.Resource(widgets).Namespace(namespace).Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating widget %d: %v", i, err)
		}
		out = append(out, created)
	}
	return out
}

// assertWidgetsUnchanged checks every Widget of before is still there with the same spec and
// resourceVersion (never written since), and that the CRD exists.
func assertWidgetsUnchanged(t *testing.T, cfg *rest.Config, namespace string, before []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range before {
		now, err := dc.Resource(widgets).Namespace(namespace).Get(ctx, w.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("widget %s after the rollback: %v", w.GetName(), err)
		}
		if !reflect.DeepEqual(now.Object["spec"], w.Object["spec"]) || now.GetResourceVersion() != w.GetResourceVersion() {
			t.Errorf("widget %s changed: spec %v (rv %s), was %v (rv %s)", w.GetName(), now.Object["spec"], now.GetResourceVersion(), w.Object["spec"], w.GetResourceVersion())
		}
	}
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dc.Resource(crd).Get(ctx, "widgets."+charttest.Group, metav1.GetOptions{}); err != nil {
		t.Errorf("the Widget CRD after the rollback: %v", err)
	}
}

// TestRollback_ManualOfFinishedDeployments: a cancelled deployment is rolled back on request
// (its cancel message says so); a completed deployment replaced by a newer one on its cluster is
// refused (rolling it back would undo the newer one too), and the newer one rolls back instead.
func TestRollback_ManualOfFinishedDeployments(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.operator("manual",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.2", charttest.Compatible))
	h.start()
	ctx := context.Background()
	first := h.submit(`{"operator": "manual", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)
	second := h.submit(`{"operator": "manual", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Direct"}`)
	h.waitStatus(second.ID, store.DeploymentCompleted)

	if _, err := h.eng.Rollback(ctx, first.ID, "alice", "wrong one"); err == nil || !strings.Contains(err.Error(), "newer deployment "+second.ID) {
		t.Fatalf("rolling back the replaced deployment: %v, want a refusal naming the newer one", err)
	}
	if _, err := h.eng.Rollback(ctx, second.ID, "alice", "bad release"); err != nil {
		t.Fatal(err)
	}
	back := h.waitRolledBack(second.ID)
	if back.RollbackReason != "manual rollback by alice: bad release" {
		t.Errorf("rollback reason %q", back.RollbackReason)
	}

	third := h.submit(`{"operator": "manual", "version": "1.0.2", "clusters": ["dev-1"], "strategy": "Rolling", "rollingConfig": {"validationPeriod": "PT1M"}}`)
	h.wait(third.ID, "validating", func(d *store.Deployment) bool { return d.Clusters[0].Status == store.ClusterValidating })
	if _, err := h.eng.Cancel(ctx, third.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(third.ID, store.DeploymentCancelled)
	if _, err := h.eng.Rollback(ctx, third.ID, "alice", ""); err != nil {
		t.Fatalf("rolling back the cancelled deployment: %v", err)
	}
	h.waitRolledBack(third.ID)
	rel, err := install.Status(ctx, h.admin["dev-1"], "manual", "op-manual")
	if err != nil || rel.ChartVersion != "1.0.0" {
		t.Fatalf("release %+v (%v), want 1.0.0 after both rollbacks", rel, err)
	}
}

// waitRolledBack waits for a finished deployment asked to roll back to end RolledBack.
func (h *harness) waitRolledBack(id string) *store.Deployment {
	h.t.Helper()
	d := h.wait(id, "rolled back", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentRolledBack || (d.Status == store.DeploymentFailed && d.RollbackFinishedAt != nil)
	})
	if d.Status != store.DeploymentRolledBack {
		h.t.Fatalf("deployment %s ended %s (%s), want RolledBack\nevents:\n%s", id, d.Status, d.Reason, h.eventLog(id))
	}
	return d
}
