package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestDirect_InstallThenUpgrade deploys 1.0.0 (a first install) and then 1.1.0 (an upgrade) with
// Direct and health checks on: each ends Completed with the cluster healthy, the Helm revision
// recorded and the one before it kept as the rollback target.
func TestDirect_InstallThenUpgrade(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.operator("direct",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible))
	h.start()

	d := h.submit(`{"operator": "direct", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct",
		"directConfig": {"parallelClusters": 1, "skipHealthChecks": false}}`)
	if d.Status != store.DeploymentQueued {
		t.Fatalf("submitted status %s, want Queued", d.Status)
	}
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	c := d.Clusters[0]
	if c.Status != store.ClusterHealthy || c.HelmRevision != 1 || c.PreviousRevision != 0 || c.InstallAttempts != 1 {
		t.Fatalf("cluster after the first install: %+v", c)
	}
	if c.Namespace != "op-direct" || c.Release != "direct" {
		t.Fatalf("release at %s/%s, want op-direct/direct", c.Namespace, c.Release)
	}
	types := h.eventTypes(d.ID)
	for _, want := range []string{"created", "admitted", "status", "cluster.installing", "cluster.installed", "stage.validating", "stage.passed"} {
		if !slices.Contains(types, want) {
			t.Errorf("events %v lack %s", types, want)
		}
	}

	d2 := h.submit(`{"operator": "direct", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Direct"}`)
	d2 = h.waitStatus(d2.ID, store.DeploymentCompleted)
	c = d2.Clusters[0]
	if c.HelmRevision != 2 || c.PreviousRevision != 1 || c.PreviousVersion != "1.0.0" {
		t.Fatalf("cluster after the upgrade: %+v", c)
	}
	rel, err := install.Status(context.Background(), h.admin["dev-1"], "direct", "op-direct")
	if err != nil {
		t.Fatal(err)
	}
	if rel.ChartVersion != "1.0.1" || rel.Status != "deployed" {
		t.Fatalf("release %+v, want 1.0.1 deployed", rel)
	}
	live, err := h.store.LiveReleaseList(context.Background(), &store.LiveReleaseListParams{OperatorName: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].DeploymentID != d2.ID || live[0].Version != "1.0.1" {
		t.Fatalf("live releases %+v, want the upgrade's", live)
	}
}
