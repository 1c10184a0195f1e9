package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestCanary_StageBelowThresholdRollsBack: with --rollback-after-failures far above the checks a
// stage gets, only the stage's verdict can roll back. The first stage's pods restart, its checks
// fail but never reach the consecutive count; at the end of the evaluation period 0 of 1
// cluster is healthy, below the threshold of 100 %, so the deployment rolls back for that reason
// and the later stage is never touched.
func TestCanary_StageBelowThresholdRollsBack(t *testing.T) {
	h := newHarness(t, threeEnvironments(t), func(c *Config) { c.FailureThreshold = 100 })
	h.operator("canthr", restarting(charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible)))
	h.start()
	before := rollbackMetrics(t, "stage", "rolledBack")
	d := h.submit(`{"operator": "canthr", "version": "1.0.0", "clusters": ["dev-1", "staging-1"],
		"strategy": "Canary", "canaryConfig": {"evaluationPeriod": "PT6S", "successThreshold": 100}}`)
	d = h.waitStatus(d.ID, store.DeploymentRolledBack)
	const want = "stage 1: 0 of 1 cluster healthy, below the threshold 100%: dev-1: "
	if !strings.HasPrefix(d.RollbackReason, want) {
		t.Errorf("rollback reason %q, want it to start %q", d.RollbackReason, want)
	}
	var toRollingBack string
	for _, e := range h.events(d.ID) {
		if e.Type == "status" && strings.Contains(e.Message, "→ RollingBack: ") {
			toRollingBack = e.Message
		}
	}
	if !strings.Contains(toRollingBack, "→ RollingBack: "+want) {
		t.Errorf("status event %q, want the move to RollingBack to give the stage's verdict", toRollingBack)
	}
	if !slices.Contains(h.eventTypes(d.ID), "healthcheck.failed") {
		t.Errorf("no failed check before the verdict: the stage must have been unhealthy during its hold\n%s", h.eventLog(d.ID))
	}
	if c := clusterByName(d, "dev-1"); c.Status != store.ClusterRolledBack {
		t.Errorf("dev-1 %+v, want rolled back", c)
	}
	if c := clusterByName(d, "staging-1"); c.Status != store.ClusterSkipped || c.InstallAttempts != 0 {
		t.Errorf("staging-1 %+v, want skipped and never installed", c)
	}
	assertRollbackMetrics(t, before, "stage", "rolledBack")
}
