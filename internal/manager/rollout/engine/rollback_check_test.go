package engine

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestRollback_RestoredHealthNotChecked: the version a rollback goes back to was installed by
// hand from a chart the operator's repository does not have, so the restored release's check
// cannot run (its CRDs are not known). That is no pass: the check is tried again until
// --install-timeout has passed, then the rollback ends RolledBack saying the health of the
// restored release was not checked (cluster message, a rollback.notChecked event, the reason),
// and the CRD warning says the stored objects were not checked either.
func TestRollback_RestoredHealthNotChecked(t *testing.T) {
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.InstallTimeout = 10 * time.Second
	})
	ctx := t.Context()
	elsewhere := charttest.ServeRepository(t, charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	ch, err := h.cfg.Charts.Fetch(ctx, operators.ChartRef{Repository: elsewhere.URL, Name: chartName}, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := install.Install(ctx, h.admin["dev-1"], install.Release{Name: "nocheck", Namespace: "op-nocheck", Chart: ch.Chart, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	h.operator("nocheck", charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "nocheck", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Direct"}`)
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	if c := d.Clusters[0]; c.PreviousRevision != 1 || c.PreviousVersion != "1.0.0" {
		t.Fatalf("cluster %+v, want the hand-installed 1.0.0 (revision 1) as the rollback target", c)
	}
	before := rollbackMetrics(t, "manual", "rolledBack")
	if _, err := h.eng.Rollback(ctx, d.ID, "alice", "check it"); err != nil {
		t.Fatal(err)
	}
	d = h.waitRolledBack(d.ID)

	if !strings.HasSuffix(d.Reason, "; health of the restored release not checked on dev-1") {
		t.Errorf("reason %q, want it to say the restored release's health was not checked", d.Reason)
	}
	c := d.Clusters[0]
	if !strings.HasPrefix(c.Message, "rolled back to 1.0.0") || !strings.Contains(c.Message, "health not checked: fetching nocheck 1.0.0") {
		t.Errorf("cluster message %q, want the rollback and why its check could not run", c.Message)
	}
	m := regexp.MustCompile(`\((\d+) attempts? in 10s\)`).FindStringSubmatch(c.Message)
	if m == nil {
		t.Fatalf("cluster message %q does not count the attempts", c.Message)
	}
	if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("the check was attempted %d time(s), want it tried again within the install timeout", n)
	}
	types := h.eventTypes(d.ID)
	if !slices.Contains(types, "rollback.notChecked") || !slices.Contains(types, "cluster.rolledBack") {
		t.Errorf("events %v, want rollback.notChecked and cluster.rolledBack", types)
	}
	var warned bool
	for _, e := range h.events(d.ID) {
		warned = warned || (e.Type == "rollback.crdWarning" && strings.Contains(e.Message, "custom resources not checked against 1.0.0's CRD schemas"))
	}
	if !warned {
		t.Errorf("no rollback.crdWarning saying the stored objects were not checked:\n%s", h.eventLog(d.ID))
	}
	rel, err := install.Status(ctx, h.admin["dev-1"], "nocheck", "op-nocheck")
	if err != nil || rel.ChartVersion != "1.0.0" || rel.Status != "deployed" {
		t.Fatalf("release %+v (%v), want 1.0.0 deployed", rel, err)
	}
	assertRollbackMetrics(t, before, "manual", "rolledBack")
}
