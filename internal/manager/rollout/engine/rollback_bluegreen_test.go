package engine

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestBlueGreen_RollbackAfterBlueDeleted: once blue's retention is over and blue is deleted, a
// rollback cannot switch back; it rolls green back as an upgrade, to the chart version and
// values of the deployment that had installed blue. That deployment is then live on green (the
// health loop and the next deployment find it there).
func TestBlueGreen_RollbackAfterBlueDeleted(t *testing.T) {
	s := servers(t, 4)
	h := newHarness(t, []target{{Name: "bg-3", Environment: store.EnvironmentDev, Server: s[3]}}, func(c *Config) {
		c.BlueRetention = 3 * time.Second
	})
	h.operator("bgdel",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.2", charttest.Compatible))
	h.start()
	ctx := t.Context()
	first := h.submit(`{"operator": "bgdel", "version": "1.0.0", "clusters": ["bg-3"], "strategy": "Direct", "values": {"replicas": 2}}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)
	d := h.submit(`{"operator": "bgdel", "version": "1.0.1", "clusters": ["bg-3"], "strategy": "BlueGreen",
		"blueGreenConfig": {"validationPeriod": "PT1S"}}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	h.wait(d.ID, "blue deleted", func(d *store.Deployment) bool { return d.BlueDeleted })

	before := rollbackMetrics(t, "manual", "rolledBack")
	if _, err := h.eng.Rollback(ctx, d.ID, "alice", "after retention"); err != nil {
		t.Fatal(err)
	}
	d = h.waitRolledBack(d.ID)
	assertRollbackMetrics(t, before, "manual", "rolledBack")
	if c := d.Clusters[0]; c.Status != store.ClusterRolledBack || !strings.Contains(c.Message, "op-bgdel-green/bgdel-green rolled back to 1.0.0 with the values of deployment "+first.ID) {
		t.Errorf("cluster %+v, want green rolled back to 1.0.0 with the first deployment's values", c)
	}
	rel, err := install.Status(ctx, h.admin["bg-3"], "bgdel-green", "op-bgdel-green")
	if err != nil || rel.ChartVersion != "1.0.0" || rel.Status != "deployed" || rel.Revision != 2 {
		t.Fatalf("green %+v (%v), want 1.0.0 deployed as its revision 2", rel, err)
	}
	kc, err := kubernetes.NewForConfig(h.admin["bg-3"])
	if err != nil {
		t.Fatal(err)
	}
	if n := replicas(t, kc, "op-bgdel-green", "bgdel-green-"+chartName); n != 2 {
		t.Errorf("green runs %d replicas, want the first deployment's 2", n)
	}
	live, err := h.store.LiveReleaseList(ctx, &store.LiveReleaseListParams{OperatorName: "bgdel"})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].DeploymentID != first.ID || live[0].Namespace != "op-bgdel-green" || live[0].Release != "bgdel-green" || live[0].HelmRevision != 2 {
		t.Fatalf("live releases %+v, want the first deployment's at op-bgdel-green/bgdel-green revision 2", live)
	}
	next := h.submit(`{"operator": "bgdel", "version": "1.0.2", "clusters": ["bg-3"], "strategy": "Direct"}`)
	if c := next.Clusters[0]; c.Namespace != "op-bgdel-green" || c.Release != "bgdel-green" {
		t.Fatalf("the next deployment goes to %s/%s, want green", c.Namespace, c.Release)
	}
	next = h.waitStatus(next.ID, store.DeploymentCompleted)
	if c := next.Clusters[0]; c.PreviousVersion != "1.0.0" {
		t.Errorf("the next deployment's rollback target %q, want 1.0.0", c.PreviousVersion)
	}
}
