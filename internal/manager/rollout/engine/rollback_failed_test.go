package engine

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestRollback_FailedWhenRevisionGone: the Helm revision an upgrade would go back to was removed
// from the release's history (as pruning does), so the cluster cannot be restored: the rollback
// ends Failed naming the cluster and why, the release keeps running the new version, and the
// failure metrics move.
func TestRollback_FailedWhenRevisionGone(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) { c.HealthLoop = false })
	h.operator("rbgone",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible))
	h.start()
	ctx := t.Context()
	first := h.submit(`{"operator": "rbgone", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)
	d := h.submit(`{"operator": "rbgone", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Direct"}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	kc, err := kubernetes.NewForConfig(h.admin["dev-1"])
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.CoreV1().Secrets("op-rbgone").Delete(ctx, "sh.helm.release.v1.rbgone.v1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("removing revision 1 from the history: %v", err)
	}

	before := rollbackMetrics(t, "manual", "failed")
	if _, err := h.eng.Rollback(ctx, d.ID, "alice", "gone"); err != nil {
		t.Fatal(err)
	}
	d = h.wait(d.ID, "rollback ended", func(d *store.Deployment) bool { return d.RollbackFinishedAt != nil && d.Status.Terminal() })
	if d.Status != store.DeploymentFailed || !strings.HasPrefix(d.Reason, "rollback failed on dev-1: ") || !strings.Contains(d.Reason, "no revision 1") {
		t.Fatalf("deployment %s (%s), want Failed naming dev-1 and the missing revision", d.Status, d.Reason)
	}
	if c := d.Clusters[0]; c.Status != store.ClusterFailed {
		t.Errorf("cluster %+v, want failed", c)
	}
	if got := h.eventAt(d.ID, "cluster.rollbackFailed", "dev-1"); got.IsZero() {
		t.Errorf("no cluster.rollbackFailed event")
	}
	rel, err := install.Status(ctx, h.admin["dev-1"], "rbgone", "op-rbgone")
	if err != nil || rel.ChartVersion != "1.0.1" || rel.Status != "deployed" {
		t.Fatalf("release %+v (%v), want 1.0.1 left running", rel, err)
	}
	assertRollbackMetrics(t, before, "manual", "failed")
}
