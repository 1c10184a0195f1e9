package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestPlanning_UnhealthyClusterStopsTheDeployment: a cluster registered through a proxy that
// then closes is really unreachable; the clusters' health check records it Unhealthy with its
// reason, and a deployment to it and a healthy cluster fails in planning naming that stored
// reason, installing nothing on either.
func TestPlanning_UnhealthyClusterStopsTheDeployment(t *testing.T) {
	s := servers(t, 1)
	h := newHarness(t, []target{{Name: "dev-ok", Environment: store.EnvironmentDev, Server: s[0]}}, nil)
	ctx := context.Background()
	kubeconfig, proxy := proxied(t, s[0])
	if _, err := h.clusters.Register(ctx, clusters.RegisterParams{Name: "dev-gone", Environment: store.EnvironmentDev, Kubeconfig: kubeconfig}); err != nil {
		t.Fatalf("registering through the proxy: %v", err)
	}
	proxy.Close()
	cl, err := h.clusters.Check(ctx, "dev-gone")
	if err != nil {
		t.Fatal(err)
	}
	if cl.Health != store.HealthUnhealthy || cl.HealthReason == "" {
		t.Fatalf("dev-gone after its proxy closed: %s (%q), want Unhealthy with a reason", cl.Health, cl.HealthReason)
	}
	h.operator("unreach", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()

	d := h.submit(`{"operator": "unreach", "version": "1.0.0", "clusters": ["dev-ok", "dev-gone"], "strategy": "Direct"}`)
	d = h.waitFailed(d.ID)
	for _, want := range []string{"clusters not ready for the deployment", "cluster dev-gone is Unhealthy (checked at ", cl.HealthReason} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q lacks %q", d.Reason, want)
		}
	}
	if strings.Contains(d.Reason, "dev-ok") {
		t.Errorf("reason %q blames the healthy cluster", d.Reason)
	}
	h.noInstalls(d.ID)
	if _, err := install.Status(ctx, h.admin["dev-ok"], "unreach", "op-unreach"); !isNotFound(err) {
		t.Errorf("release on the healthy cluster after the planning failure: err %v, want none", err)
	}
	for _, c := range d.Clusters {
		if c.InstallAttempts != 0 || c.HelmRevision != 0 {
			t.Errorf("cluster %s: %+v, want never installed", c.ClusterName, c)
		}
	}
}
