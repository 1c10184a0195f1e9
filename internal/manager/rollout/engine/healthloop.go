package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/words"
)

// leaderLease names the lease of the replica that does the fleet-wide duties: the health loop and
// the approval mail (one checker and one sender; another replica takes over within a lease when
// it dies).
const leaderLease = "leader"

// leaderLoop tries for the leader lease every third of it and, once this replica holds it, leads
// until a renewal fails or ctx ends.
func (e *Engine) leaderLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.Lease / 3)
	defer t.Stop()
	for {
		if e.takeLead(ctx) {
			e.lead(ctx, t.C)
		}
		select {
		case <-ctx.Done():
			_ = e.cfg.Store.LeaseRelease(context.WithoutCancel(ctx), leaderLease, e.cfg.ReplicaID)
			return
		case <-t.C:
		}
	}
}

// takeLead takes or renews the leader lease, within a third of it; false when another replica
// holds it or the store did not answer (this replica cannot know it still leads).
func (e *Engine) takeLead(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Lease/3)
	defer cancel()
	now := e.now()
	held, err := e.cfg.Store.LeaseAcquire(ctx, &store.LeaseAcquireParams{Name: leaderLease, Owner: e.cfg.ReplicaID, Now: now, Until: now.Add(e.cfg.Lease)})
	if err != nil && ctx.Err() == nil {
		e.logErr(ctx, "taking the leader lease", err)
	}
	return err == nil && held
}

// lead runs the leader's duties, each on its own ticker, the health loop and the approval mail,
// and renews the lease on every tick of renew whatever they are doing. When a renewal fails it
// cancels the duties (a health round in flight stops) and returns once they have: within a
// third of the lease, before another replica can take the lapsed lease.
func (e *Engine) lead(ctx context.Context, renew <-chan time.Time) {
	e.log.InfoContext(ctx, "engine: Leading the health loop and approval mail", "replica", e.cfg.ReplicaID)
	duties, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if e.cfg.Notifier != nil {
		wg.Go(func() { e.every(duties, e.cfg.Lease/3, e.mailPending) })
	}
	if e.cfg.HealthLoop {
		wg.Go(func() {
			e.every(duties, e.cfg.HealthInterval, func(ctx context.Context) {
				e.HealthRound(ctx)
				if ctx.Err() == nil {
					e.setHealthGauges(ctx)
				}
			})
		})
	}
	defer func() {
		cancel()
		wg.Wait()
		if e.cfg.HealthLoop {
			// Another replica runs the loop and exports the gauges: a sum over replicas stays right.
			telemetry.SetOperatorHealth(0, 0, 0)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew:
		}
		if !e.takeLead(ctx) {
			if ctx.Err() == nil {
				e.log.WarnContext(ctx, "engine: Lost the leader lease; stopping the health loop and approval mail", "replica", e.cfg.ReplicaID)
			}
			return
		}
	}
}

// every runs duty at once and then every interval (at once again when a run took longer) until
// ctx ends.
func (e *Engine) every(ctx context.Context, interval time.Duration, duty func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		duty(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// setHealthGauges sets the operator health gauges from the stored latest checks.
func (e *Engine) setHealthGauges(ctx context.Context) {
	recs, err := e.cfg.Store.OperatorHealthList(ctx, &store.OperatorHealthListParams{})
	if err != nil {
		e.logErr(ctx, "reading operator health", err)
		return
	}
	latest := map[string][]api.HealthState{}
	for _, r := range recs {
		latest[r.OperatorName] = append(latest[r.OperatorName], api.HealthState(r.Health))
	}
	telemetry.SetOperatorHealth(health.Tally(latest))
}

// HealthRound checks every live release once (the health loop's round) and returns how many.
func (e *Engine) HealthRound(ctx context.Context) int {
	live, err := e.cfg.Store.LiveReleaseList(ctx, &store.LiveReleaseListParams{})
	if err != nil {
		e.logErr(ctx, "listing live releases", err)
		return 0
	}
	// Active deployments are watched by their own steps (which judge and roll them back).
	active, err := e.cfg.Store.DeploymentList(ctx, &store.DeploymentListParams{Active: true, Limit: 1000})
	if err != nil {
		e.logErr(ctx, "listing active deployments", err)
		return 0
	}
	busy := map[[2]string]bool{}
	for _, d := range active {
		for _, c := range d.Clusters {
			busy[[2]string{d.OperatorID, c.ClusterName}] = true
		}
	}
	live = slices.DeleteFunc(live, func(r *store.LiveRelease) bool { return busy[[2]string{r.OperatorID, r.ClusterName}] })
	ops := map[string]*store.Operator{}
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	for _, r := range live {
		op := ops[r.OperatorID]
		if op == nil {
			if op, err = e.cfg.Store.OperatorGetByID(ctx, r.OperatorID); err != nil {
				continue
			}
			ops[r.OperatorID] = op
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			e.checkLive(ctx, op, r)
		})
	}
	wg.Wait()
	return len(live)
}

func (e *Engine) checkLive(ctx context.Context, op *store.Operator, r *store.LiveRelease) {
	ch, err := e.chartOf(ctx, op, r.Version)
	if err != nil {
		e.logErr(e.liveLogContext(ctx, op, r), "health: fetching the chart of "+op.Name+" "+r.Version, err)
		return
	}
	_, alert := RollbackScope(r, e.now())
	res, err := e.checkLiveRelease(ctx, r.DeploymentID, op.Name, r.ClusterName, alert, health.Target{
		OperatorName: op.Name, Namespace: r.Namespace, Release: r.Release, CRDs: ch.crds,
	})
	if err != nil {
		e.logErr(e.liveLogContext(ctx, op, r), "health: checking "+op.Name+" on "+r.ClusterName, err)
		return
	}
	if res.health.Health == api.Unhealthy {
		e.event(ctx, r.DeploymentID, "healthcheck.failed", r.ClusterName,
			fmt.Sprintf("%s in a row: %s", words.Count(res.failures, "failed check"), summary(res.health)), nil)
	}
	if res.failures < e.cfg.FailureThreshold {
		return
	}
	if alert != "" {
		if res.failures == e.cfg.FailureThreshold { // once: when a rollback would have been due
			e.event(ctx, r.DeploymentID, "healthcheck.alert", r.ClusterName, fmt.Sprintf("%s %s is Unhealthy on %s (%s in a row: %s); no automatic rollback: %s",
				op.Name, r.Version, r.ClusterName, words.Count(res.failures, "failed check"), summary(res.health), alert), nil)
		}
		return
	}
	reason := fmt.Sprintf("health check: %s failed %d checks in a row: %s", r.ClusterName, res.failures, summary(res.health))
	rolled, err := e.cfg.Store.DeploymentUpdate(ctx, r.DeploymentID, func(d *store.Deployment) error {
		if d.RollbackRequested || d.Status != store.DeploymentCompleted {
			return errNothingToDo
		}
		now := e.now()
		d.RollbackRequested, d.RollbackReason, d.NextRunAt = true, reason, &now
		return nil
	})
	if err == nil {
		e.log.WarnContext(clusterContext(logContext(ctx, rolled), r.ClusterName), "engine: Automatic rollback", "reason", reason)
		e.event(ctx, r.DeploymentID, "rollback.requested", r.ClusterName, "automatic rollback: "+reason, nil)
		e.Wake()
	}
}

// errNothingToDo leaves a deployment as it is from inside an update.
var errNothingToDo = errors.New("nothing to do")
