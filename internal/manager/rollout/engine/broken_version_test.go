package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/health/healthtest"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestBrokenVersion_RolledBackWithinTheStage: a real controller-runtime controller reconciles the
// operator's widgets as the version the cluster runs would (healthtest: it follows the release's
// chart version, as a controller pod of that version would), with tenants' widgets failing before
// the upgrade. Version 1.0.1 is broken, two ways: it stops updating status (the generations its
// users bump are never observed), or every reconcile fails (its own reconcile metrics, read through
// the API server's Service proxy, show the errors). Each is rolled back within its Rolling
// validation stage by the signal that names the operator (crds, metrics), never by the tenants'
// failures, and the restored 1.0.0 is judged healthy against the baseline captured before.
func TestBrokenVersion_RolledBackWithinTheStage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		broken healthtest.Mode
		signal string // the part of the check that fails 1.0.1
		why    string // in the rollback reason
	}{
		{"StopsUpdatingStatus", healthtest.StopStatus, health.PartCRDs, "not reconciled"},
		{"ReconcilesFail", healthtest.Error, health.PartMetrics, "error rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
				// Resources not reconciled for 3 s count against the operator (5 minutes by default).
				c.Checker = health.NewChecker(health.Config{FreshFor: 3 * time.Second})
			})
			name := "broken-" + strings.ToLower(tc.name[:4])
			ns := "op-" + name
			h.goodThenBad(name, "dev-1", func(f charttest.ChartFiles) charttest.ChartFiles { return f })
			admin := h.admin["dev-1"]
			op := healthtest.Start(t, admin, healthtest.Options{Namespace: ns, Release: name,
				GVK: schema.GroupVersionKind{Group: charttest.Group, Version: "v1alpha1", Kind: "Widget"}})
			follow(t, admin, name, ns, op, map[string]healthtest.Mode{"1.0.0": healthtest.OK, "1.0.1": tc.broken})
			crs := createWidgets(t, admin, ns, 6)
			t.Cleanup(func() { deleteWidgets(t, admin, crs) }) // the cluster is shared: other tests count every widget
			op.SetFailing("widget-0", "widget-1")              // the tenants' mistakes, failing before the upgrade
			waitReconciled(t, h, name, ns, 2)

			d := h.submit(`{"operator": "` + name + `", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Rolling",
				"rollingConfig": {"validationPeriod": "PT60S"}}`)
			h.wait(d.ID, "validating", func(d *store.Deployment) bool { return d.Clusters[0].Status == store.ClusterValidating })
			if tc.broken == healthtest.StopStatus {
				bumpWidgets(t, admin, crs[2:]) // its users change their widgets; 1.0.1 never observes it
			}
			d = h.waitStatus(d.ID, store.DeploymentRolledBack)
			if !strings.HasPrefix(d.RollbackReason, "health check: dev-1 failed") || !strings.Contains(d.RollbackReason, tc.signal+" Unhealthy") ||
				!strings.Contains(d.RollbackReason, tc.why) {
				t.Errorf("rollback reason %q, want the %s part naming %q", d.RollbackReason, tc.signal, tc.why)
			}
			if strings.Contains(d.Reason, "baseline unhealthy") || d.StageStartedAt == nil || d.RollbackStartedAt.Sub(*d.StageStartedAt) >= time.Minute {
				t.Errorf("reason %q (stage started %v, rollback %v): want a rollback within the validation stage, the restored version healthy",
					d.Reason, d.StageStartedAt, d.RollbackStartedAt)
			}
			var captured string
			for _, e := range h.events(d.ID) {
				if e.Type == "cluster.baseline" {
					captured = e.Message
				}
			}
			if !strings.Contains(captured, "6 resources, 2 failing; metrics read") {
				t.Errorf("the baseline captured as the deployment started: %q, want the 6 widgets, the tenants' 2 failing and a metrics snapshot", captured)
			}
			if slices.Contains(h.eventTypes(d.ID), "rollback.baselineUnhealthy") {
				t.Errorf("the restored 1.0.0 was judged unhealthy:\n%s", h.eventLog(d.ID))
			}
			// The judgement of the previous version is kept: nothing 1.0.1 did became a baseline.
			last, err := h.store.OperatorBaselineGet(context.Background(), &store.OperatorBaselineGetParams{OperatorName: name, ClusterName: "dev-1"})
			if err != nil {
				t.Fatalf("the last Healthy baseline: %v", err)
			}
			if last.CapturedAt.After(*d.StartedAt) && last.CapturedAt.Before(*d.RollbackFinishedAt) {
				t.Errorf("the last Healthy baseline was captured at %s, while 1.0.1 ran (%s to %s)", last.CapturedAt, d.StartedAt, d.RollbackFinishedAt)
			}
		})
	}
}

// follow makes op reconcile as the version of release that the cluster runs: modes by chart version.
func follow(t *testing.T, cfg *rest.Config, release, namespace string, op *healthtest.Operator, modes map[string]healthtest.Mode) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if rel, err := install.Status(ctx, cfg, release, namespace); err == nil {
				if m, ok := modes[rel.ChartVersion]; ok {
					op.SetMode(m)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// waitReconciled waits until the controller has reconciled every widget (the failing ones
// reported Ready=False) and the health loop then found its resources Healthy with its metrics
// read, so the upgrade's baseline holds the tenants' failures as failing.
func waitReconciled(t *testing.T, h *harness, operator, namespace string, failing int) {
	t.Helper()
	dc, err := dynamic.NewForConfig(h.admin["dev-1"])
	if err != nil {
		t.Fatal(err)
	}
	var since time.Time
	deadline := time.Now().Add(60 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if since.IsZero() {
			if reconciled(t, dc, namespace) == failing {
				since = time.Now()
			}
			continue
		}
		// The custom resources judged Healthy and the metrics read (their rate since the process
		// started may keep the check Degraded until a baseline holds a snapshot to compare with).
		recs, err := h.store.OperatorHealthList(context.Background(), &store.OperatorHealthListParams{OperatorName: operator})
		if err == nil && len(recs) == 1 && recs[0].Health != string(api.Unhealthy) && recs[0].CheckedAt.After(since) {
			if res, err := health.DecodeResult(recs[0].Result); err == nil && res.CRDs.Health == api.Healthy && res.Metrics.Read == api.VerdictPassed {
				return
			}
		}
	}
	recs, _ := h.store.OperatorHealthList(context.Background(), &store.OperatorHealthListParams{OperatorName: operator})
	last := "none"
	if len(recs) == 1 {
		last = recs[0].Health + " " + string(recs[0].Result)
	}
	t.Fatalf("%s: the widgets never all reconciled (%d of them failing; reconciled since %v), or their check never Healthy with the metrics read after; last check: %s",
		operator, reconciled(t, dc, namespace), since, last)
}

// reconciled counts the widgets reported Ready=False when every widget in namespace is reconciled
// at its generation (-1 while one is not).
func reconciled(t *testing.T, dc dynamic.Interface, namespace string) int {
	list, err := dc.Resource(widgets).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failing := 0
	for _, w := range list.Items {
		og, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		if og != w.GetGeneration() || len(conds) != 1 {
			return -1
		}
		if conds[0].(map[string]any)["status"] == "False" {
			failing++
		}
	}
	return failing
}

// bumpWidgets changes each widget's spec, as its user would: a new generation to observe.
func bumpWidgets(t *testing.T, cfg *rest.Config, list []*unstructured.Unstructured) {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range list {
		patch := []byte(`{"spec":{"color":"green"}}`)
		if _, err := dc.Resource(widgets).Namespace(w.GetNamespace()).Patch(context.Background(), w.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("changing %s: %v", w.GetName(), err)
		}
	}
}
