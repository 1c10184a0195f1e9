package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/words"
)

// Pause and resume (POST /api/v1/deployments/{id}/pause, /resume). The pause is stored on the
// deployment (store.Deployment.PausedAt), so whichever replica claims it next honours it: the
// step under way ends (an install in flight finishes, also one a dead replica left half done; a
// stage's hold runs to its end and is judged), and no new cluster step starts: no install, no
// new hold, no BlueGreen switch, no completion. Safety goes on: while paused the engine keeps
// health-checking the clusters that run the new version, and FailureThreshold failed checks in
// a row roll the deployment back as they would unpaused; a cancel or a manual rollback is
// honoured too. A rollback is never paused (it ends the pause).

// maxPauseReason bounds the reason given with a pause.
const maxPauseReason = 2000

// Pause pauses a running deployment. A finished one, one rolling back or being cancelled, and
// one already paused refuse it (*ConflictError).
func (e *Engine) Pause(ctx context.Context, id, by, reason string) (*store.Deployment, error) {
	reason = strings.TrimSpace(reason)
	if len(reason) > maxPauseReason {
		return nil, invalid.Reasoned("reason", "tooLong", nil, "at most %d characters, not %d", maxPauseReason, len(reason))
	}
	d, err := e.request(ctx, id, func(d *store.Deployment) error {
		switch {
		case d.Status.Terminal():
			return conflict("deployment %s is %s: a finished deployment cannot be paused", d.ID, d.Status)
		case d.Status == store.DeploymentRollingBack || d.RollbackRequested:
			return conflict("deployment %s is rolling back: a rollback is not paused (it restores the previous version)", d.ID)
		case d.CancelRequested:
			return conflict("deployment %s is being cancelled: nothing to pause", d.ID)
		case d.PausedAt != nil:
			return conflict("deployment %s is already paused (by %s since %s)", d.ID, d.PausedBy, d.PausedAt.UTC().Format(time.RFC3339))
		}
		now := e.now()
		d.PausedAt, d.PausedBy, d.PauseReason = &now, by, reason
		return nil
	})
	if err != nil {
		return nil, err
	}
	msg := "paused by " + by
	if reason != "" {
		msg += ": " + reason
	}
	e.event(ctx, id, "paused", "", msg+"; the cluster step under way finishes, no new one starts until resumed",
		map[string]any{"by": by, "reason": reason})
	return d, nil
}

// Resume lets a paused deployment go on from where it stopped. One that is not paused refuses
// it (*ConflictError): a finished deployment is never paused.
func (e *Engine) Resume(ctx context.Context, id, by string) (*store.Deployment, error) {
	var pausedBy string
	var since time.Time
	d, err := e.request(ctx, id, func(d *store.Deployment) error {
		switch {
		case d.Status.Terminal():
			return conflict("deployment %s is %s: nothing to resume", d.ID, d.Status)
		case d.PausedAt == nil:
			return conflict("deployment %s is not paused (%s): nothing to resume", d.ID, d.Status)
		}
		if d.Reason == pausedReason(d) {
			d.Reason = "resumed by " + by
		}
		pausedBy, since = d.PausedBy, *d.PausedAt
		d.PausedAt, d.PausedBy, d.PauseReason = nil, "", ""
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.event(ctx, id, "resumed", "", fmt.Sprintf("resumed by %s after %s paused (paused by %s)", by, e.now().Sub(since).Round(time.Second), pausedBy),
		map[string]any{"by": by, "pausedBy": pausedBy, "pausedSeconds": e.now().Sub(since).Seconds()})
	return d, nil
}

// pausedReason is the deployment's reason while its pause holds it.
func pausedReason(d *store.Deployment) string {
	r := fmt.Sprintf("paused by %s since %s", d.PausedBy, d.PausedAt.UTC().Format(time.RFC3339))
	if d.PauseReason != "" {
		r += ": " + d.PauseReason
	}
	return r
}

// pauseStops reports whether a paused deployment stops before its next step: no step of its is
// under way (no stage hold or switch begun, no cluster left mid-install).
func pauseStops(d *store.Deployment, plan *strategy.Plan) bool {
	if d.PausedAt == nil || d.StageStartedAt != nil {
		return false
	}
	if d.Stage >= len(plan.Stages) {
		return true
	}
	st := plan.Stages[d.Stage]
	if st.Kind == strategy.StageSwitch {
		return d.SwitchedAt == nil
	}
	for _, name := range st.Clusters {
		if c := clusterByName(d, name); c != nil && c.Status == store.ClusterInstalling {
			return false
		}
	}
	return true
}

// pausedWait holds a paused deployment: it says once that the pause took hold, then keeps
// checking the clusters that run the new version every HealthInterval and rolls back after
// FailureThreshold failed checks in a row, as an unpaused deployment would.
func (e *Engine) pausedWait(ctx context.Context, d *store.Deployment, op *store.Operator, plan *strategy.Plan) (time.Duration, error) {
	if reason := pausedReason(d); d.Reason != reason {
		if _, err := e.update(ctx, d.ID, func(d *store.Deployment) error { d.Reason = reason; return nil }); err != nil {
			return 0, err
		}
		waiting := 0
		for _, c := range d.Clusters {
			if c.Status == store.ClusterPending {
				waiting++
			}
		}
		e.event(ctx, d.ID, "pause.reached", "", fmt.Sprintf("paused before stage %d of %d: no cluster step is under way; %s not started wait for the resume, those running %s are still health-checked",
			min(d.Stage+1, len(plan.Stages)), len(plan.Stages), words.Count(waiting, "cluster"), d.Version), map[string]any{"stage": d.Stage})
		// The pause's line names who paused it (userId), not the requester.
		e.log.InfoContext(askedBy(logContext(ctx, d), d.PausedBy), "engine: Deployment paused", "reason", d.PauseReason,
			"stage", d.Stage, "waiting", waiting)
	}
	var watched []string
	for _, c := range d.Clusters {
		if c.Status == store.ClusterValidating || c.Status == store.ClusterHealthy {
			watched = append(watched, c.ClusterName)
		}
	}
	if len(watched) == 0 {
		return -1, nil // nothing to watch: the resume makes it due
	}
	results, err := e.checkStage(ctx, d, op, watched)
	if err != nil {
		return 0, err
	}
	for _, r := range results {
		if r.health.Health == api.Unhealthy {
			e.event(ctx, d.ID, "healthcheck.failed", r.cluster, fmt.Sprintf("%s in a row while paused: %s", words.Count(r.failures, "failed check"), summary(r.health)), nil)
		}
		if r.failures >= e.cfg.FailureThreshold {
			return e.startRollback(ctx, d, fmt.Sprintf("health check while paused: %s failed %d checks in a row: %s", r.cluster, r.failures, summary(r.health)))
		}
	}
	return e.cfg.HealthInterval, nil
}

// stopStarting reports whether a stage should start no more installs: the deployment was paused,
// or asked to cancel or roll back, since the stage began (an install in flight still finishes).
func (e *Engine) stopStarting(ctx context.Context, id string) bool {
	cur, err := e.cfg.Store.DeploymentGetByID(ctx, id)
	if err != nil {
		e.logErr(ctx, "reading deployment "+id+" before an install", err)
		return false
	}
	return cur.PausedAt != nil || pendingRequest(cur)
}
