package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// canaryClusters is BenchmarkCanaryDesign's fleet: the design's 10 clusters.
const canaryClusters = 10

// canaryHoldScale shortens the benchmark's holds (Config.TestHoldScale): the design's PT5M
// evaluation periods last 3 s.
const canaryHoldScale = 0.01

// canaryStages are the clusters of the design's three stages over the benchmark's fleet (4 Dev,
// 3 Staging, 3 Production): 10 %, 30 %, 100 %.
var canaryStages = [][]string{
	{"dev-1"},
	{"dev-2", "dev-3"},
	{"dev-4", "staging-1", "staging-2", "staging-3", "prod-1", "prod-2", "prod-3"},
}

// canaryRun numbers the benchmark's operators: every run upgrades releases of its own.
var canaryRun int

// BenchmarkCanaryDesign runs the design's Canary JSON (strategy/testdata/design-canary.json:
// 10 %, +20 %, PT5M evaluations, 95 %) as a whole through the real engine on the design's 10
// clusters (4 Dev, 3 Staging, 3 Production; real kube-apiservers with controller-managers and
// kwok nodes, so the operator's pods become Ready), upgrading an operator from 1.0.0 (installed
// first by a Direct deployment, not measured) to 1.0.1. The holds are shortened by
// Config.TestHoldScale (0.01: each PT5M lasts 3 s); the approval workflow is off (the design's
// "< 30 min including evaluation periods" does not count people deciding). It checks the plan
// ran as the design's three stages and reports:
//
//   - measured-s: seconds from Submit to Completed, with the shortened holds;
//   - scaled-waits-s: the holds the run waited (3 × 3 s);
//   - projected-min: minutes at scale 1: measured − scaled waits + the real waits (3 × PT5M),
//     against the design's 30 minutes.
func BenchmarkCanaryDesign(b *testing.B) {
	s := servers(b, canaryClusters)
	var targets []target
	for i, name := range slices.Concat(canaryStages...) {
		env := map[byte]store.Environment{'d': store.EnvironmentDev, 's': store.EnvironmentStaging, 'p': store.EnvironmentProduction}[name[0]]
		targets = append(targets, target{Name: name, Environment: env, Server: s[i]})
	}
	h := newHarness(b, targets, func(c *Config) {
		c.TestHoldScale = canaryHoldScale
		c.Policy = approvals.Policy{Disabled: []store.Environment{store.EnvironmentDev, store.EnvironmentStaging, store.EnvironmentProduction}}
	})
	h.start()
	body := designCanaryBody(b)
	var measured, scaled, realWaits time.Duration
	for b.Loop() {
		canaryRun++
		op := h.operator(fmt.Sprintf("canary-bench-%d", canaryRun),
			charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible), charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible))
		first := h.submit(fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "environments": ["Dev", "Staging", "Production"], "strategy": "Direct"}`, op.Name))
		h.awaitCompleted(first.ID)

		body["operator"], body["version"] = op.Name, "1.0.1"
		raw, err := json.Marshal(body)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		d := h.submit(string(raw))
		d = h.awaitCompleted(d.ID)
		measured += time.Since(start)
		h.checkCanaryStages(d)
		opts := h.eng.planOptions(op)
		plan, spec, err := strategy.PlanOf(d, opts)
		if err != nil {
			b.Fatal(err)
		}
		opts.HoldScale = 0
		unscaled, err := strategy.NewPlan(spec, opts)
		if err != nil {
			b.Fatal(err)
		}
		scaled += plan.MinDuration()
		realWaits += unscaled.MinDuration()
	}
	n := float64(b.N)
	b.ReportMetric(measured.Seconds()/n, "measured-s")
	b.ReportMetric(scaled.Seconds()/n, "scaled-waits-s")
	b.ReportMetric((measured-scaled+realWaits).Minutes()/n, "projected-min")
}

// designCanaryBody is the design's Canary JSON, shared with the strategy tests, as the body of a
// deployment to the environments Dev, Staging and Production (operator and version to be set).
func designCanaryBody(b *testing.B) map[string]any {
	raw, err := os.ReadFile("../strategy/testdata/design-canary.json")
	if err != nil {
		b.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		b.Fatal(err)
	}
	body["environments"] = request.Environments
	return body
}

// awaitCompleted waits (10 minutes at most: the fleet is ten clusters on a shared machine) for
// the deployment to complete; another end fails.
func (h *harness) awaitCompleted(id string) *store.Deployment {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		d, err := h.store.DeploymentGetByID(context.Background(), id)
		if err != nil {
			h.t.Fatal(err)
		}
		if d.Status == store.DeploymentCompleted {
			return d
		}
		if d.Status.Terminal() || time.Now().After(deadline) {
			h.t.Fatalf("deployment %s: %s (%s), want Completed\nevents:\n%s", id, d.Status, d.Reason, h.eventLog(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkCanaryStages fails unless every cluster ran in its stage of canaryStages, healthy.
func (h *harness) checkCanaryStages(d *store.Deployment) {
	h.t.Helper()
	for i, names := range canaryStages {
		for _, name := range names {
			if c := clusterByName(d, name); c == nil || c.Stage != i || c.Status != store.ClusterHealthy {
				h.t.Fatalf("cluster %s: %+v, want healthy at stage %d", name, c, i)
			}
		}
	}
}
