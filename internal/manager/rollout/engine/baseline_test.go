package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestBaseline_TenantsFailingDoNotRollBack is the case of issue 27: custom resources that their
// tenants got wrong, failing before an upgrade, and more failing for their own reasons during it
// (Ready=False, reconciled at their generation). The deployment captures the baseline as it
// starts on the cluster, its checks find the operator Healthy against it, and the upgrade
// completes: nothing rolls back. The stored checks show the baseline and whose failures they are.
func TestBaseline_TenantsFailingDoNotRollBack(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.goodThenBad("tenants", "dev-1", func(f charttest.ChartFiles) charttest.ChartFiles { return f })
	admin := h.admin["dev-1"]
	before := createWidgets(t, admin, "tenant-a", 4)
	t.Cleanup(func() { deleteWidgets(t, admin, before) }) // the cluster is shared: other tests count every widget
	setWidgetsReady(t, admin, before, "False", "InvalidSpec")

	d := h.submit(`{"operator": "tenants", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT8S"}}`)
	h.wait(d.ID, "validating", func(d *store.Deployment) bool { return d.Clusters[0].Status == store.ClusterValidating })
	since := createWidgets(t, admin, "tenant-b", 3)
	t.Cleanup(func() { deleteWidgets(t, admin, since) })
	setWidgetsReady(t, admin, since, "False", "InvalidSpec")

	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	if types := h.eventTypes(d.ID); slices.Contains(types, "rollback.requested") || slices.Contains(types, "healthcheck.failed") {
		t.Fatalf("tenants' failures failed the upgrade:\n%s", h.eventLog(d.ID))
	}
	var captured string
	for _, e := range h.events(d.ID) {
		if e.Type == "cluster.baseline" {
			captured = e.Message
		}
	}
	if !strings.Contains(captured, "baseline captured before the install") || !strings.Contains(captured, "failing") {
		t.Fatalf("no baseline captured at the cluster's start:\n%s", h.eventLog(d.ID))
	}
	recs, err := h.store.OperatorHealthList(context.Background(), &store.OperatorHealthListParams{OperatorName: "tenants", ClusterName: "dev-1"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("stored health %v (%v)", recs, err)
	}
	got, err := health.DecodeResult(recs[0].Result)
	if err != nil {
		t.Fatal(err)
	}
	c := got.CRDs
	if got.Health != api.Healthy || got.CRDReconciliation != api.ReconciliationActive || c.Baseline == nil ||
		c.TenantFailures.FailingBefore < 4 || c.TenantFailures.FailingReconciled < 3 || c.OperatorFailures != (api.OperatorFailures{}) {
		t.Fatalf("the last check: %s, %s, crds %+v (baseline %+v)", got.Health, got.CRDReconciliation, c, c.Baseline)
	}
	// The deployment's baseline, or the health loop's first Healthy check after it took over.
	if b := c.Baseline; (b.Source != health.BaselineDeploymentStart || b.DeploymentID != d.ID) && b.Source != health.BaselineLastHealthy {
		t.Fatalf("the checks compared with %+v, want the deployment's baseline", c.Baseline)
	}
	stored, err := h.store.OperatorBaselineGet(context.Background(), &store.OperatorBaselineGetParams{OperatorName: "tenants", ClusterName: "dev-1", DeploymentID: d.ID})
	if err != nil {
		t.Fatalf("the deployment's baseline is not stored: %v", err)
	}
	b, err := health.DecodeBaseline(stored.Data)
	if err != nil || b.Source != health.BaselineDeploymentStart || b.DeploymentID != d.ID || b.Summary().Failing < 4 {
		t.Fatalf("stored baseline %+v (%v), want the deployment's start with the 4 failing widgets", b.Summary(), err)
	}

	// The health loop stores a last Healthy baseline: while 1.0.0 ran (before the widgets) when a
	// round came between the two deployments, else at its first Healthy check after this one,
	// with the 7 failing widgets. Either way it leaves it as it is for 5 minutes.
	var last *store.OperatorBaseline
	h.wait(d.ID, "a last Healthy baseline", func(*store.Deployment) bool {
		last, err = h.store.OperatorBaselineGet(context.Background(), &store.OperatorBaselineGetParams{OperatorName: "tenants", ClusterName: "dev-1"})
		return err == nil
	})
	lb, err := health.DecodeBaseline(last.Data)
	if err != nil || lb.Source != health.BaselineLastHealthy || (!last.CapturedAt.Before(stored.CapturedAt) && lb.Summary().Failing < 7) {
		t.Fatalf("last Healthy baseline %+v (%v), want one from before the deployment or one with the 7 failing widgets", lb.Summary(), err)
	}
	time.Sleep(3 * h.cfg.HealthInterval)
	again, err := h.store.OperatorBaselineGet(context.Background(), &store.OperatorBaselineGetParams{OperatorName: "tenants", ClusterName: "dev-1"})
	if err != nil || !again.CapturedAt.Equal(last.CapturedAt) {
		t.Fatalf("the last Healthy baseline was rewritten within 5 minutes: %v then %v (%v)", last.CapturedAt, again.CapturedAt, err)
	}
}
