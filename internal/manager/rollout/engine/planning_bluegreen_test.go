package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestPlanning_BlueGreenNeedsBlue: BlueGreen to a cluster where the operator does not run is
// refused at submission (the store knows nothing runs there) and, when its release was removed
// since, in planning; blueGreenConfig.blueNamespace other than where the operator runs fails
// planning; given where it runs, the deployment goes through. A refused deployment installs
// nothing.
func TestPlanning_BlueGreenNeedsBlue(t *testing.T) {
	s := servers(t, 4)
	// No health loop: the test removes a live release behind the manager's back.
	h := newHarness(t, []target{{Name: "bgp-1", Environment: store.EnvironmentDev, Server: s[3]}}, func(c *Config) { c.HealthLoop = false })
	h.operator("bgplan",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.2", charttest.Compatible))
	h.start()
	ctx := context.Background()

	// Nothing runs there yet: 400 naming the cluster, nothing stored.
	err := h.submitErr(`{"operator": "bgplan", "version": "1.0.1", "clusters": ["bgp-1"], "strategy": "BlueGreen"}`)
	e, ok := invalid.As(err)
	if !ok || e.Field != "clusters[0]" || e.Reason != "notInstalled" || !strings.Contains(e.Message, "install it first with a Direct deployment") {
		t.Fatalf("BlueGreen before any install: %v, want invalid clusters[0] notInstalled saying to install with Direct", err)
	}
	if list, err := h.store.DeploymentList(ctx, &store.DeploymentListParams{Limit: 10}); err != nil || len(list) != 0 {
		t.Fatalf("deployments after the refusal: %d (%v), want none", len(list), err)
	}

	first := h.submit(`{"operator": "bgplan", "version": "1.0.0", "clusters": ["bgp-1"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)

	// blueNamespace where blue is not: Failed in planning, nothing installed.
	wrong := h.submit(`{"operator": "bgplan", "version": "1.0.1", "clusters": ["bgp-1"], "strategy": "BlueGreen",
		"blueGreenConfig": {"blueNamespace": "bg-elsewhere", "validationPeriod": "PT0S"}}`)
	d := h.waitFailed(wrong.ID)
	for _, want := range []string{"BlueGreen has no blue", "runs in namespace op-bgplan", `blueGreenConfig.blueNamespace "bg-elsewhere"`} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q lacks %q", d.Reason, want)
		}
	}
	h.noInstalls(wrong.ID)
	if _, err := install.Status(ctx, h.admin["bgp-1"], "bgplan-green", "bg-elsewhere-green"); !isNotFound(err) {
		t.Errorf("green after the planning failure: err %v, want no release", err)
	}

	// blueNamespace where blue is: green goes beside it and the switch happens.
	right := h.submit(`{"operator": "bgplan", "version": "1.0.1", "clusters": ["bgp-1"], "strategy": "BlueGreen",
		"blueGreenConfig": {"blueNamespace": "op-bgplan", "validationPeriod": "PT0S"}}`)
	if c := right.Clusters[0]; c.BlueNamespace != "op-bgplan" || c.BlueRelease != "bgplan" || c.Namespace != "op-bgplan-green" || c.Release != "bgplan-green" {
		t.Fatalf("blue %s/%s green %s/%s, want op-bgplan/bgplan and op-bgplan-green/bgplan-green", c.BlueNamespace, c.BlueRelease, c.Namespace, c.Release)
	}
	d = h.waitStatus(right.ID, store.DeploymentCompleted)
	if d.SwitchedAt == nil {
		t.Fatalf("completed without switching: %+v", d)
	}

	// The live release (green now) was removed behind the manager's back: the store still
	// lists it, so submission accepts; planning looks at the cluster and refuses.
	if err := install.Uninstall(ctx, h.admin["bgp-1"], "bgplan-green", "op-bgplan-green"); err != nil {
		t.Fatal(err)
	}
	gone := h.submit(`{"operator": "bgplan", "version": "1.0.2", "clusters": ["bgp-1"], "strategy": "BlueGreen", "blueGreenConfig": {"validationPeriod": "PT0S"}}`)
	d = h.waitFailed(gone.ID)
	for _, want := range []string{"bgplan is not installed on cluster bgp-1", "no Helm release bgplan-green in namespace op-bgplan-green", "install it first with a Direct deployment"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q lacks %q", d.Reason, want)
		}
	}
	h.noInstalls(gone.ID)
	if _, err := install.Status(ctx, h.admin["bgp-1"], "bgplan", "op-bgplan"); err != nil {
		t.Errorf("blue after the refused deployment: %v", err)
	}
}
