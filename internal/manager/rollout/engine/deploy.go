package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/words"
)

// deploying works on the current stage: install its clusters, hold and judge them, go on.
func (e *Engine) deploying(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	op, err := e.operatorOf(ctx, d)
	if err != nil {
		return 0, err
	}
	plan, spec, err := strategy.PlanOf(d, e.planOptions(op))
	if err != nil {
		return e.fail(ctx, d, "install", err.Error())
	}
	if pauseStops(d, plan) {
		return e.pausedWait(ctx, d, op, plan)
	}
	if d.Stage >= len(plan.Stages) {
		return e.complete(ctx, d, plan)
	}
	st := &plan.Stages[d.Stage]
	if st.Kind == strategy.StageSwitch {
		return e.switchStage(ctx, d, op, plan, spec, st)
	}
	var todo []*store.DeploymentCluster
	for _, name := range st.Clusters {
		c := clusterByName(d, name)
		if c == nil || (c.Status == store.ClusterPending && d.PausedAt != nil) {
			continue // paused: only an install left mid-way is finished
		}
		if c.Status == store.ClusterPending || c.Status == store.ClusterInstalling {
			todo = append(todo, c)
		}
	}
	if len(todo) > 0 {
		if failed := e.installAll(ctx, d, op, spec, st, todo); len(failed) > 0 {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return e.startRollback(ctx, d, "install failed on "+strings.Join(failed, "; "))
		}
		return 0, nil
	}
	return e.hold(ctx, d, op, plan, spec, st)
}

// installAll installs the stage's clusters, st.Parallel at a time, and returns the failures.
func (e *Engine) installAll(ctx context.Context, d *store.Deployment, op *store.Operator, spec *request.Spec, st *strategy.Stage, todo []*store.DeploymentCluster) []string {
	ch, err := e.chartOf(ctx, op, d.Version)
	if err != nil {
		return []string{err.Error()}
	}
	sem := make(chan struct{}, max(st.Parallel, 1))
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for _, c := range todo {
		sem <- struct{}{}
		if c.Status == store.ClusterPending && e.stopStarting(ctx, d.ID) {
			<-sem
			break // paused, cancelled or rolling back: the installs in flight finish, no more start
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := e.installOne(ctx, d, spec, ch, st, c); err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("%s: %v", c.ClusterName, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}

// installOne installs the version on one cluster. It first records the attempt and what the
// release was before (so a rollback knows its target even if this replica dies mid-install);
// on a repeated attempt it adopts a release the previous attempt completed instead of
// installing twice.
func (e *Engine) installOne(ctx context.Context, d *store.Deployment, spec *request.Spec, ch *fetched, st *strategy.Stage, c *store.DeploymentCluster) error {
	ctx = clusterContext(ctx, c.ClusterName)
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, c.ClusterName)
	if err != nil {
		return e.clusterFailed(ctx, d, c, nil, err)
	}
	before, err := install.Status(ctx, cfg, c.Release, c.Namespace)
	if err != nil && !isNotFound(err) {
		return e.clusterFailed(ctx, d, c, nil, err)
	}
	if c.InstallAttempts > 0 && before != nil && before.ChartVersion == d.Version && before.Status == "deployed" && before.Revision > c.PreviousRevision {
		e.clusterEvent(ctx, d, c, "cluster.adopted", fmt.Sprintf("revision %d of %s was installed by an attempt that did not record it: adopted", before.Revision, d.Version))
		return e.clusterInstalled(ctx, d, st, c, &install.Result{Revision: before.Revision, Version: before.ChartVersion, PreviousRevision: c.PreviousRevision, PreviousVersion: c.PreviousVersion})
	}
	if c.InstallAttempts == 0 && st.HealthChecks {
		e.captureBaseline(ctx, d, c, cfg, ch.crds) // the version before, as the checks will compare with it
	}
	_, err = e.update(ctx, d.ID, func(d *store.Deployment) error {
		cur := clusterByName(d, c.ClusterName)
		if cur.InstallAttempts == 0 && before != nil {
			cur.PreviousRevision, cur.PreviousVersion = before.Revision, before.ChartVersion
		}
		cur.InstallAttempts++
		cur.Status, cur.Message = store.ClusterInstalling, "installing "+d.Version
		*c = *cur
		return nil
	})
	if err != nil {
		return err
	}
	e.clusterEvent(ctx, d, c, "cluster.installing", fmt.Sprintf("installing %s into %s/%s (attempt %d)", d.Version, c.Namespace, c.Release, c.InstallAttempts))
	values, err := e.valuesFor(ctx, d, spec, string(c.Environment))
	if err != nil {
		return e.clusterFailed(ctx, d, c, nil, err)
	}
	free, err := e.slot(ctx)
	if err != nil {
		return err
	}
	defer free()
	ictx, cancel := context.WithTimeout(ctx, e.cfg.InstallTimeout)
	defer cancel()
	own, err := ch.installable()
	if err != nil {
		return e.clusterFailed(ctx, d, c, nil, err)
	}
	res, err := install.Install(ictx, cfg, install.Release{Name: c.Release, Namespace: c.Namespace, Chart: own, Values: values, Timeout: e.cfg.InstallTimeout})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping or the claim was lost: the next attempt redoes it
		}
		return e.clusterFailed(ctx, d, c, res, err)
	}
	return e.clusterInstalled(ctx, d, st, c, res)
}

func (e *Engine) clusterInstalled(ctx context.Context, d *store.Deployment, st *strategy.Stage, c *store.DeploymentCluster, res *install.Result) error {
	status, msg := store.ClusterValidating, fmt.Sprintf("revision %d installed; validating", res.Revision)
	if !st.HealthChecks {
		status, msg = store.ClusterHealthy, fmt.Sprintf("revision %d installed (health checks skipped)", res.Revision)
	}
	_, err := e.update(ctx, d.ID, func(d *store.Deployment) error {
		cur := clusterByName(d, c.ClusterName)
		cur.Status, cur.Message, cur.HelmRevision = status, msg, res.Revision
		if cur.PreviousRevision == 0 && res.PreviousRevision > 0 && res.PreviousRevision != res.Revision {
			cur.PreviousRevision, cur.PreviousVersion = res.PreviousRevision, res.PreviousVersion
		}
		return nil
	})
	if err != nil {
		return err
	}
	if status == store.ClusterHealthy {
		telemetry.OperatorsDeployedTotal.WithLabelValues(d.Strategy).Inc()
	}
	e.clusterEvent(ctx, d, c, "cluster.installed", fmt.Sprintf("%s: %s (%d API requests, %s)", d.Version, msg, res.APIRequests, res.Duration.Round(time.Millisecond)))
	return nil
}

// clusterFailed records a failed install and returns err for the stage's verdict.
func (e *Engine) clusterFailed(ctx context.Context, d *store.Deployment, c *store.DeploymentCluster, res *install.Result, cause error) error {
	msg := cause.Error()
	_, err := e.update(ctx, d.ID, func(d *store.Deployment) error {
		cur := clusterByName(d, c.ClusterName)
		cur.Status, cur.Message = store.ClusterFailed, msg
		if res != nil && res.Revision > 0 {
			cur.HelmRevision = res.Revision
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.clusterEvent(ctx, d, c, "cluster.failed", msg)
	return cause
}

// hold watches the stage's installed clusters for the stage's hold, then judges it.
func (e *Engine) hold(ctx context.Context, d *store.Deployment, op *store.Operator, plan *strategy.Plan, spec *request.Spec, st *strategy.Stage) (time.Duration, error) {
	now := e.now()
	last := d.Stage == len(plan.Stages)-1
	if !st.HealthChecks {
		return e.passStage(ctx, d, plan, st, fmt.Sprintf("stage %d: installed (health checks skipped)", st.Index+1))
	}
	if d.StageStartedAt == nil {
		status := d.Status
		if last {
			status = store.DeploymentValidating
		}
		// The event tells the move to Validating (the last stage's): it commits with it.
		ev := e.newEvent(d.ID, "stage.validating", "", fmt.Sprintf("stage %d (%s): holding %s, then %d%% of %s must be healthy",
			st.Index+1, strings.Join(st.Clusters, ", "), st.Hold, int(st.SuccessThreshold*100+0.5), words.Count(len(st.Clusters), "cluster")), nil)
		_, err := e.updateRecording(ctx, d.ID, ev, func(d *store.Deployment) error {
			d.StageStartedAt, d.Status = &now, status
			if status != store.DeploymentDeploying {
				d.Reason = fmt.Sprintf("validating stage %d for %s", st.Index+1, st.Hold)
			}
			return nil
		})
		return 0, err
	}
	// Check the clusters of this stage and of the stages it follows (still this deployment's to
	// watch: the health loop leaves active deployments to the engine); judge this stage's.
	watched := installedUpTo(d, plan, st.Index)
	results, err := e.checkStage(ctx, d, op, watched)
	if err != nil {
		return 0, err
	}
	healthy, unhealthy := 0, 0
	var bad []string
	for _, r := range results {
		if r.health.Health == api.Unhealthy {
			e.event(ctx, d.ID, "healthcheck.failed", r.cluster, fmt.Sprintf("%s in a row: %s", words.Count(r.failures, "failed check"), summary(r.health)), nil)
		}
		if r.failures >= e.cfg.FailureThreshold {
			return e.startRollback(ctx, d, fmt.Sprintf("health check: %s failed %d checks in a row: %s", r.cluster, r.failures, summary(r.health)))
		}
		if !slices.Contains(st.Clusters, r.cluster) {
			continue
		}
		switch r.health.Health {
		case api.Healthy:
			healthy++
		case api.Unhealthy:
			unhealthy++
			bad = append(bad, r.cluster+": "+summary(r.health))
		default:
			bad = append(bad, r.cluster+": "+summary(r.health))
		}
	}
	// The stage's analyses: one that fails fails the stage like a failed health check; the
	// stage does not pass before each has taken its count of measurements.
	failed, analysed, next, err := e.analyze(ctx, d, op, spec, st)
	if err != nil {
		return 0, err
	}
	if failed != "" {
		return e.startRollback(ctx, d, fmt.Sprintf("stage %d: analysis %s", st.Index+1, failed))
	}
	holdEnd := d.StageStartedAt.Add(st.Hold)
	if now.Before(holdEnd) {
		return min(e.checkEvery(st), holdEnd.Sub(now), next), nil
	}
	if !analysed {
		return min(e.checkEvery(st), next), nil
	}
	if st.Passed(healthy) {
		return e.passStage(ctx, d, plan, st, fmt.Sprintf("stage %d: %d of %s healthy", st.Index+1, healthy, words.Count(len(st.Clusters), "cluster")))
	}
	grace := holdEnd.Add(e.cfg.InstallTimeout)
	if (unhealthy == 0 || st.Hold == 0) && now.Before(grace) {
		// Only Degraded (a part could not run), or a stage without a hold whose first checks
		// failed: a failure is FailureThreshold checks in a row (above); look again.
		return min(e.checkEvery(st), grace.Sub(now)), nil
	}
	return e.startRollback(ctx, d, fmt.Sprintf("stage %d: %d of %s healthy, below the threshold %d%%: %s",
		st.Index+1, healthy, words.Count(len(st.Clusters), "cluster"), int(st.SuccessThreshold*100+0.5), strings.Join(bad, "; ")))
}

// installedUpTo names the clusters of stages 0..last that run the deployment's version.
func installedUpTo(d *store.Deployment, plan *strategy.Plan, last int) []string {
	var out []string
	for _, s := range plan.Stages[:last+1] {
		if s.Kind != strategy.StageInstall && s.Index != last {
			continue
		}
		for _, name := range s.Clusters {
			c := clusterByName(d, name)
			if c != nil && (c.Status == store.ClusterValidating || c.Status == store.ClusterHealthy) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// checkEvery is the interval of health checks during a stage's hold.
func (e *Engine) checkEvery(st *strategy.Stage) time.Duration {
	every := e.cfg.HealthInterval
	if st.Hold > 0 && st.Hold/3 < every {
		every = max(st.Hold/3, time.Second)
	}
	if st.Hold == 0 {
		every = min(every, 2*time.Second)
	}
	return every
}

// passStage marks the stage's clusters healthy and moves to the next stage after its pause.
func (e *Engine) passStage(ctx context.Context, d *store.Deployment, plan *strategy.Plan, st *strategy.Stage, why string) (time.Duration, error) {
	newly := 0
	_, err := e.update(ctx, d.ID, func(d *store.Deployment) error {
		newly = 0
		for _, name := range st.Clusters {
			c := clusterByName(d, name)
			if c != nil && c.Status == store.ClusterValidating {
				c.Status, c.Message = store.ClusterHealthy, fmt.Sprintf("revision %d healthy", c.HelmRevision)
				newly++
			}
		}
		d.Stage, d.StageStartedAt = st.Index+1, nil
		if d.Stage < len(plan.Stages) {
			d.Status, d.Reason = store.DeploymentDeploying, fmt.Sprintf("stage %d of %d passed", st.Index+1, len(plan.Stages))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	telemetry.OperatorsDeployedTotal.WithLabelValues(d.Strategy).Add(float64(newly))
	e.event(ctx, d.ID, "stage.passed", "", why, map[string]any{"stage": st.Index, "percentage": st.Percentage})
	if st.Pause > 0 && st.Index+1 < len(plan.Stages) {
		return st.Pause, nil
	}
	return 0, nil
}

// complete ends a deployment whose stages all passed.
func (e *Engine) complete(ctx context.Context, d *store.Deployment, plan *strategy.Plan) (time.Duration, error) {
	var blueDelete *time.Time
	if plan.Strategy == api.StrategyBlueGreen && d.SwitchedAt != nil {
		t := e.now().Add(e.cfg.BlueRetention)
		blueDelete = &t
	}
	_, err := e.transition(ctx, d, store.DeploymentCompleted, fmt.Sprintf("%s runs on %s", d.Version, words.Count(len(d.Clusters), "cluster")), func(d *store.Deployment) {
		d.BlueDeleteAt = blueDelete
	})
	if err != nil {
		return 0, err
	}
	if d.StartedAt != nil {
		telemetry.ObserveDeployment(d.Strategy, string(store.DeploymentCompleted), e.now().Sub(*d.StartedAt))
	}
	if blueDelete != nil {
		return blueDelete.Sub(e.now()), nil
	}
	return -1, nil
}

func isNotFound(err error) bool {
	var ie *invalid.Error
	return errors.As(err, &ie) && ie.Reason == "notFound"
}
