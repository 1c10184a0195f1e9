package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/words"
)

// checkConcurrency bounds the health checks run at once by one step or one health round.
const checkConcurrency = 10

type checkResult struct {
	cluster  string
	health   health.Result
	failures int // consecutive Unhealthy checks, this one included
}

// checkStage checks the deployment's release on each of clusters and records the results.
func (e *Engine) checkStage(ctx context.Context, d *store.Deployment, op *store.Operator, clusters []string) ([]checkResult, error) {
	ch, err := e.chartOf(ctx, op, d.Version)
	if err != nil {
		return nil, err
	}
	out := make([]checkResult, len(clusters))
	errs := make([]error, len(clusters))
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	for i, name := range clusters {
		c := clusterByName(d, name)
		if c == nil {
			return nil, fmt.Errorf("deployment %s has no cluster %s", d.ID, name)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = e.checkOne(ctx, d.ID, op.Name, name, "", health.Target{
				OperatorName: op.Name, Namespace: c.Namespace, Release: c.Release, CRDs: ch.crds,
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkOne runs one health check and records it (the consecutive failures are counted in the
// database, so they survive a change of replica); alert says why failed checks only alert ("":
// they roll the deployment back), for the notification.
func (e *Engine) checkOne(ctx context.Context, deploymentID, operator, cluster, alert string, t health.Target) (checkResult, error) {
	var h health.Result
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, cluster)
	if err == nil && t.Baseline == nil {
		t.Baseline = e.baselineFor(ctx, operator, cluster)
	}
	if err != nil {
		h = health.Result{OperatorHealthCheck: health.NotCheckedOn(cluster, "no connection to the cluster: "+err.Error(), e.now())}
	} else if h, err = e.cfg.Checker.Check(ctx, cluster, cfg, t); err != nil {
		return checkResult{}, err
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return checkResult{}, err
	}
	rec, err := e.recordHealth(ctx, h, &store.OperatorHealthRecordParams{
		OperatorName: operator, ClusterName: cluster, DeploymentID: deploymentID,
		Health: string(h.Health), Result: raw, CheckedAt: h.LastChecked,
	}, alert)
	if err != nil {
		return checkResult{}, err
	}
	return checkResult{cluster: cluster, health: h, failures: rec.ConsecutiveFailures}, nil
}

// summary is a check's problems in one line.
func summary(h health.Result) string {
	if p := health.Problems(h.OperatorHealthCheck); p != "" {
		return p
	}
	return string(h.Health)
}

// restoredRelease is what a cluster went back to: the release to check and the version it runs.
type restoredRelease struct {
	namespace, release, version string
}

// checkRestored checks the release a cluster went back to. A check that could not run (the
// version's chart not fetched, the check refused, or no part of it ran) is no pass: it is tried
// again every restoreCheckEvery until --install-timeout has passed. ran is false when it never
// ran, with why; otherwise h is the result (the caller refuses Unhealthy), an Unhealthy one
// confirmed as the failed version's was (confirmUnhealthy).
func (e *Engine) checkRestored(ctx context.Context, cfg *rest.Config, op *store.Operator, cluster string, r restoredRelease) (h health.Result, ran bool, why string, err error) {
	every := min(e.cfg.HealthInterval, restoreCheckEvery)
	deadline := e.now().Add(e.cfg.InstallTimeout)
	for attempt := 1; ; attempt++ {
		h, why = e.tryCheck(ctx, cfg, op, cluster, r, nil)
		if why == "" {
			break
		}
		if e.now().Add(every).After(deadline) {
			return h, false, fmt.Sprintf("%s (%s in %s)", why, words.Count(attempt, "attempt"), e.cfg.InstallTimeout), nil
		}
		select {
		case <-ctx.Done():
			return h, false, why, ctx.Err()
		case <-time.After(every):
		}
	}
	if h.Health != api.Unhealthy {
		return h, true, "", nil
	}
	h, err = e.confirmUnhealthy(ctx, cfg, op, cluster, r, h)
	return h, true, "", err
}

// confirmUnhealthy checks an Unhealthy restored release again until FailureThreshold checks in
// a row, HealthInterval apart, found it Unhealthy, as the version that failed was judged: a
// controller just restored gets the time to catch up (observe the generations its users changed),
// and its metrics are judged on its own reconciles since it was restored (the first check's
// snapshot) against the window before the deployment that the deployment's checks used. The
// first check that is not Unhealthy ends it (the restored release is not unhealthy); a check that
// cannot run neither confirms nor clears.
func (e *Engine) confirmUnhealthy(ctx context.Context, cfg *rest.Config, op *store.Operator, cluster string, r restoredRelease, first health.Result) (health.Result, error) {
	base := &health.Baseline{Source: "restored"}
	if b := e.baselineFor(ctx, op.Name, cluster); b != nil {
		*base = *b
	}
	if first.Observed != nil && first.Observed.Metrics != nil {
		base.Metrics, base.Before, base.BeforeWindow = first.Observed.Metrics, nil, first.Metrics.Before
	}
	h := first
	for confirmed := 1; confirmed < e.cfg.FailureThreshold; {
		select {
		case <-ctx.Done():
			return h, ctx.Err()
		case <-time.After(e.cfg.HealthInterval):
		}
		next, why := e.tryCheck(ctx, cfg, op, cluster, r, base)
		if why != "" {
			continue
		}
		if h = next; h.Health != api.Unhealthy {
			return h, nil
		}
		confirmed++
	}
	return h, nil
}

// restoreCheckEvery is the longest wait between attempts at a restored release's check.
const restoreCheckEvery = 2 * time.Second

// tryCheck runs one check of a restored release against base (nil: the operator's baseline on
// the cluster); why says what kept it from running.
func (e *Engine) tryCheck(ctx context.Context, cfg *rest.Config, op *store.Operator, cluster string, r restoredRelease, base *health.Baseline) (health.Result, string) {
	if r.version == "" {
		return health.Result{}, "the version " + r.namespace + "/" + r.release + " runs is not known"
	}
	ch, err := e.chartOf(ctx, op, r.version)
	if err != nil {
		return health.Result{}, err.Error()
	}
	if base == nil {
		base = e.baselineFor(ctx, op.Name, cluster)
	}
	h, err := e.cfg.Checker.Check(ctx, cluster, cfg, health.Target{OperatorName: op.Name, Namespace: r.namespace, Release: r.release, CRDs: ch.crds,
		Baseline: base})
	if err != nil {
		return h, "checking: " + err.Error()
	}
	if !health.Ran(h.OperatorHealthCheck) {
		return h, summary(h)
	}
	return h, ""
}
