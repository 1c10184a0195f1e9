package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// threeEnvironments registers the fleet's first three servers as one cluster per environment.
func threeEnvironments(t *testing.T) []target {
	s := servers(t, 3)
	return []target{
		{Name: "dev-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "staging-1", Environment: store.EnvironmentStaging, Server: s[1]},
		{Name: "prod-1", Environment: store.EnvironmentProduction, Server: s[2]},
	}
}

// approveAll decides every pending approval of the deployment as bob, once it has some.
func (h *harness) approveAll(id string) []*store.Approval {
	h.t.Helper()
	h.wait(id, "waiting for approval", func(d *store.Deployment) bool { return d.Status == store.DeploymentWaitingApproval })
	list, err := h.store.ApprovalList(context.Background(), &store.ApprovalListParams{DeploymentID: id, Limit: 10})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, a := range list {
		if _, err := h.store.ApprovalDecide(context.Background(), &store.ApprovalDecision{ApprovalID: a.ID, Actor: "bob", Approve: true, Comment: "ok"}, time.Now()); err != nil {
			h.t.Fatal(err)
		}
	}
	return list
}

// installedAt is when the deployment's event of type typ for cluster was recorded.
func (h *harness) eventAt(id, typ, cluster string) time.Time {
	h.t.Helper()
	for _, e := range h.events(id) {
		if e.Type == typ && e.Cluster == cluster {
			return e.At
		}
	}
	h.t.Fatalf("deployment %s has no %s event for %s:\n%s", id, typ, cluster, h.eventLog(id))
	return time.Time{}
}

// TestCanary_DesignStagesWithApproval: the design's Canary (10 %, then 30 %, then the rest) over
// four clusters of Dev, Staging and Production waits for the Production approval, then deploys
// its three stages in environment order: dev-1 (25 %), staging-1 (50 %), then staging-2 and
// prod-1 together (100 %), holding each stage for its evaluation period before the next starts.
func TestCanary_DesignStagesWithApproval(t *testing.T) {
	s := servers(t, 4)
	h := newHarness(t, []target{
		{Name: "dev-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "staging-1", Environment: store.EnvironmentStaging, Server: s[1]},
		{Name: "staging-2", Environment: store.EnvironmentStaging, Server: s[3]},
		{Name: "prod-1", Environment: store.EnvironmentProduction, Server: s[2]},
	}, nil)
	h.operator("canary", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "canary", "version": "1.0.0", "environments": ["Dev", "Staging", "Production"],
		"strategy": "Canary", "canaryConfig": {"initialPercentage": 10, "incrementPercentage": 20,
		"evaluationPeriod": "PT2S", "successThreshold": 0.95}}`)
	approvals := h.approveAll(d.ID)
	if len(approvals) != 1 || approvals[0].Kind != "production" {
		t.Fatalf("approvals %+v, want one production approval", approvals)
	}
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	stages := [][]string{{"dev-1"}, {"staging-1"}, {"staging-2", "prod-1"}}
	for i, names := range stages {
		for _, name := range names {
			c := clusterByName(d, name)
			if c.Status != store.ClusterHealthy || c.Stage != i {
				t.Errorf("cluster %s: %+v, want healthy at stage %d", name, c, i)
			}
			if i == 0 {
				continue
			}
			prev := stages[i-1][len(stages[i-1])-1]
			prevInstalled := h.eventAt(d.ID, "cluster.installed", prev)
			if started := h.eventAt(d.ID, "cluster.installing", name); started.Sub(prevInstalled) < 2*time.Second {
				t.Errorf("%s started %s after %s was installed: the 2 s evaluation period was not held", name, started.Sub(prevInstalled), prev)
			}
		}
	}
	var passed []float64
	for _, e := range h.events(d.ID) {
		if e.Type == "stage.passed" {
			var details struct{ Percentage float64 }
			if err := json.Unmarshal(e.Details, &details); err != nil {
				t.Fatalf("stage.passed details %s: %v", e.Details, err)
			}
			passed = append(passed, details.Percentage)
		}
	}
	if !slices.Equal(passed, []float64{25, 50, 100}) {
		t.Errorf("stages passed at %v %%, want 25, 50, 100:\n%s", passed, h.eventLog(d.ID))
	}
}

// TestCanary_FailedStageRollsBackEverything: the first stage of a Canary fails its evaluation
// (its pods restart: 3 failed checks in a row), so the whole deployment rolls back and the later
// stages are never touched.
func TestCanary_FailedStageRollsBackEverything(t *testing.T) {
	h := newHarness(t, threeEnvironments(t), nil)
	h.operator("canfail", restarting(charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible)))
	h.start()
	before := rollbackMetrics(t, "healthcheck", "rolledBack")
	d := h.submit(`{"operator": "canfail", "version": "1.0.0", "clusters": ["dev-1", "staging-1"],
		"strategy": "Canary", "canaryConfig": {"evaluationPeriod": "PT8S", "successThreshold": 1}}`)
	d = h.waitStatus(d.ID, store.DeploymentRolledBack)
	// Three failed checks in a row come before the end of the 8 s evaluation period (checks every
	// 2 s): that, not the stage's verdict (TestCanary_StageBelowThresholdRollsBack), rolls back.
	if !strings.HasPrefix(d.RollbackReason, "health check: dev-1 failed 3 checks in a row") {
		t.Errorf("rollback reason %q, want 3 failed health checks of dev-1", d.RollbackReason)
	}
	assertRollbackMetrics(t, before, "healthcheck", "rolledBack")
	if c := clusterByName(d, "dev-1"); c.Status != store.ClusterRolledBack {
		t.Errorf("dev-1 %+v, want rolled back", c)
	}
	if c := clusterByName(d, "staging-1"); c.Status != store.ClusterSkipped || c.InstallAttempts != 0 {
		t.Errorf("staging-1 %+v, want skipped and never installed", c)
	}
	if _, err := install.Status(context.Background(), h.admin["dev-1"], "canfail", "op-canfail"); !isNotFound(err) {
		t.Errorf("the first install on dev-1 is still there after the rollback (err %v)", err)
	}
}

// TestBlueGreen_ManualSwitchThenBlueDeleted: green is installed beside blue and validated, the
// switch waits for its request, then webhooks and traffic go to green, blue's controllers scale
// to 0, and blue is deleted once its retention is over; the next deployment upgrades green.
func TestBlueGreen_ManualSwitchThenBlueDeleted(t *testing.T) {
	s := servers(t, 4)
	h := newHarness(t, []target{{Name: "bg-1", Environment: store.EnvironmentDev, Server: s[3]}}, func(c *Config) {
		c.BlueRetention = 3 * time.Second
	})
	h.operator("bg",
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible),
		charttest.OperatorChart(chartName, "1.0.2", charttest.Compatible))
	h.start()
	first := h.submit(`{"operator": "bg", "version": "1.0.0", "clusters": ["bg-1"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)

	d := h.submit(`{"operator": "bg", "version": "1.0.1", "clusters": ["bg-1"], "strategy": "BlueGreen",
		"blueGreenConfig": {"validationPeriod": "PT1S", "autoSwitch": false}}`)
	c := d.Clusters[0]
	if c.BlueNamespace != "op-bg" || c.BlueRelease != "bg" || c.Namespace != "op-bg-green" || c.Release != "bg-green" {
		t.Fatalf("blue %s/%s green %s/%s, want op-bg/bg and op-bg-green/bg-green", c.BlueNamespace, c.BlueRelease, c.Namespace, c.Release)
	}
	d = h.wait(d.ID, "waiting for the switch", func(d *store.Deployment) bool { return d.Reason == waitingSwitch || d.Status.Terminal() })
	if d.SwitchedAt != nil || d.Status.Terminal() {
		t.Fatalf("deployment %s (%s) before the switch was asked", d.Status, d.Reason)
	}
	kc, err := kubernetes.NewForConfig(h.admin["bg-1"])
	if err != nil {
		t.Fatal(err)
	}
	if n := replicas(t, kc, "op-bg", "bg-"+chartName); n != 1 {
		t.Fatalf("blue has %d replicas before the switch, want 1", n)
	}
	if _, err := h.eng.Switch(context.Background(), d.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	if d.SwitchedAt == nil || d.BlueDeleteAt == nil {
		t.Fatalf("completed without switch or blue deletion time: %+v", d)
	}
	if n := replicas(t, kc, "op-bg", "bg-"+chartName); n != 0 {
		t.Errorf("blue has %d replicas after the switch, want 0", n)
	}
	h.wait(d.ID, "blue deleted", func(d *store.Deployment) bool { return d.BlueDeleted })
	if _, err := install.Status(context.Background(), h.admin["bg-1"], "bg", "op-bg"); !isNotFound(err) {
		t.Errorf("blue's release after its retention: err %v, want not found", err)
	}
	types := h.eventTypes(d.ID)
	for _, want := range []string{"switch.waiting", "switch.requested", "cluster.switched", "blue.deleted"} {
		if !slices.Contains(types, want) {
			t.Errorf("events lack %s: %v", want, types)
		}
	}

	next := h.submit(`{"operator": "bg", "version": "1.0.2", "clusters": ["bg-1"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	if c := next.Clusters[0]; c.Namespace != "op-bg-green" || c.Release != "bg-green" {
		t.Fatalf("the next deployment goes to %s/%s, want the live green op-bg-green/bg-green", c.Namespace, c.Release)
	}
	h.waitStatus(next.ID, store.DeploymentCompleted)
}

// TestBlueGreen_UnhealthyGreenSwitchesBack: green passes validation, is switched to, then fails
// during the switch monitor: the deployment switches back to blue (no reinstall) and removes green.
func TestBlueGreen_UnhealthyGreenSwitchesBack(t *testing.T) {
	s := servers(t, 4)
	h := newHarness(t, []target{{Name: "bg-2", Environment: store.EnvironmentDev, Server: s[3]}}, func(c *Config) {
		c.SwitchMonitor = 8 * time.Second
	})
	h.goodThenBad("bgfail", "bg-2", restarting)
	d := h.submit(`{"operator": "bgfail", "version": "1.0.1", "clusters": ["bg-2"], "strategy": "BlueGreen",
		"blueGreenConfig": {"validationPeriod": "PT0S"}}`)
	d = h.waitStatus(d.ID, store.DeploymentRolledBack)
	if d.SwitchedAt == nil {
		t.Fatalf("rolled back before the switch (%s): the test wants a failure after it", d.RollbackReason)
	}
	if c := d.Clusters[0]; c.Status != store.ClusterRolledBack || !strings.Contains(c.Message, "switched back") {
		t.Errorf("cluster %+v, want switched back", c)
	}
	kc, err := kubernetes.NewForConfig(h.admin["bg-2"])
	if err != nil {
		t.Fatal(err)
	}
	if n := replicas(t, kc, "op-bgfail", "bgfail-"+chartName); n != 1 {
		t.Errorf("blue has %d replicas after switching back, want 1", n)
	}
	if _, err := install.Status(context.Background(), h.admin["bg-2"], "bgfail-green", "op-bgfail-green"); !isNotFound(err) {
		t.Errorf("green after the rollback: err %v, want removed", err)
	}
}

func replicas(t *testing.T, kc kubernetes.Interface, namespace, name string) int32 {
	t.Helper()
	d, err := kc.AppsV1().Deployments(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
