//go:build e2e

package realnodetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// The Canary test's operator, on two clusters: canaryDev (Dev) goes first, canaryStaging after.
const (
	canaryOperator  = "canary-op"
	canaryNamespace = "op-canary-op"
	canaryDev       = "canary-dev"
	canaryStaging   = "canary-staging"
)

// TestCanary_RealPodsOnTwoClusters needs real containers on two clusters: a Canary deployment
// goes from cluster to cluster, judging each stage on what the kubelets report of real pods.
// Two control planes, each with a real node of its own, are registered as a Dev and a Staging
// cluster (the Canary's order). The operator's good version runs on both; a Canary of a version
// that crashes 6 s after its start (50 % of the clusters first, then the rest) is judged Unhealthy
// on the first stage's cluster and rolled back there, and the second cluster is never touched
// (its pod is the same pod); a Canary of a good version passes the first stage's evaluation on
// real pods, goes on to the second cluster and completes, each cluster's pod Running and Ready on
// its own node.
func TestCanary_RealPodsOnTwoClusters(t *testing.T) {
	dev, staging := realNode(t), secondCluster(t)
	for _, w := range []*world{dev, staging} {
		freshNamespace(t, w, canaryNamespace, canaryOperator)
	}
	env := dev.env(t, canaryOperator, canaryNamespace)
	// The same chart on both; the Staging cluster's pods reach their own API server.
	other := staging.env(t, canaryOperator, canaryNamespace)
	byEnv := fmt.Sprintf(`{"Staging": {"apiHost": %q, "apiPort": %q}}`, other.APIHost, other.APIPort)
	m := newManager(t, dev, canaryDev)
	m.register(canaryStaging, store.EnvironmentStaging, staging)
	var charts []charttest.ChartFiles
	for _, v := range []version{{Version: "2.0.0", Mode: "ok"}, {Version: "2.0.1", Mode: "crash"}, {Version: "2.0.2", Mode: "ok"}} {
		charts = append(charts, operatorChart(v, env))
	}
	m.operator(canaryOperator, canaryNamespace, charts...)
	clusters := `"clusters": ["` + canaryDev + `", "` + canaryStaging + `"], "valuesByEnvironment": ` + byEnv

	d := m.deploy(`{"operator": "` + canaryOperator + `", "version": "2.0.0", ` + clusters + `, "strategy": "Direct"}`)
	m.waitStatus(d.ID, store.DeploymentCompleted, 3*time.Minute)
	untouched := waitRunningIn(t, staging, canaryNamespace, canaryOperator, "2.0.0")
	waitRunningIn(t, dev, canaryNamespace, canaryOperator, "2.0.0")

	t.Run("CrashingVersionRolledBackOnTheFirstCluster", func(t *testing.T) {
		begin := time.Now()
		d := m.deploy(`{"operator": "` + canaryOperator + `", "version": "2.0.1", ` + clusters + `, "strategy": "Canary",
			"canaryConfig": {"initialPercentage": 50, "incrementPercentage": 50, "evaluationPeriod": "PT60S", "successThreshold": 1}}`)
		d = m.waitStatus(d.ID, store.DeploymentRolledBack, 3*time.Minute)
		for _, s := range []string{"health check", canaryDev, health.PartPods + " Unhealthy: ", "exit code 1"} {
			if !strings.Contains(d.RollbackReason, s) {
				t.Errorf("rollback reason %q: want it to say %q", d.RollbackReason, s)
			}
		}
		for _, c := range d.Clusters {
			if c.ClusterName == canaryStaging && c.Status != store.ClusterPending && c.Status != store.ClusterSkipped {
				t.Errorf("the second stage's cluster is %s (%s): want it never reached", c.Status, c.Message)
			}
		}
		waitRunningIn(t, dev, canaryNamespace, canaryOperator, "2.0.0")
		if now := waitRunningIn(t, staging, canaryNamespace, canaryOperator, "2.0.0"); now.UID != untouched.UID || restarts(now) != restarts(untouched) {
			t.Errorf("the second cluster's pod changed: %s before, %s (%d restarts) after", untouched.Name, now.Name, restarts(now))
		}
		t.Logf("figures: rolled back on %s %s after the request: %s", canaryDev, d.RollbackFinishedAt.Sub(begin).Round(100*time.Millisecond), d.RollbackReason)
	})

	t.Run("GoodVersionGoesFromClusterToCluster", func(t *testing.T) {
		begin := time.Now()
		d := m.deploy(`{"operator": "` + canaryOperator + `", "version": "2.0.2", ` + clusters + `, "strategy": "Canary",
			"canaryConfig": {"initialPercentage": 50, "incrementPercentage": 50, "evaluationPeriod": "PT10S", "successThreshold": 1}}`)
		d = m.waitStatus(d.ID, store.DeploymentCompleted, 3*time.Minute)
		first, second := waitRunningIn(t, dev, canaryNamespace, canaryOperator, "2.0.2"), waitRunningIn(t, staging, canaryNamespace, canaryOperator, "2.0.2")
		if first.Spec.NodeName != dev.node.Name || second.Spec.NodeName != staging.node.Name {
			t.Errorf("pods on %s and %s, want %s and %s", first.Spec.NodeName, second.Spec.NodeName, dev.node.Name, staging.node.Name)
		}
		var stages []string
		for _, e := range m.events(d.ID) {
			if e.Type == "stage.passed" {
				stages = append(stages, e.Message)
			}
		}
		if len(stages) != 2 {
			t.Errorf("passed stages %q, want two (one cluster each)\nevents:\n%s", stages, m.eventLog(d.ID))
		}
		t.Logf("figures: completed on both clusters %s after the request; stages: %s", d.FinishedAt.Sub(begin).Round(100*time.Millisecond), strings.Join(stages, "; "))
	})
}
