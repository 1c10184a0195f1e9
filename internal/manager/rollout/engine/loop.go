package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// errLostClaim: another replica took the deployment over (this one's lease lapsed); the step
// stops without writing.
var errLostClaim = errors.New("the claim on the deployment was lost")

// retryDelay is the wait after a step failed for a reason that may pass (a database or cluster
// that did not answer).
const retryDelay = 5 * time.Second

// maxStepsPerClaim bounds the steps run under one claim before the deployment is released and
// claimed again (so one deployment cannot starve the others of this replica).
const maxStepsPerClaim = 50

// runLoop claims and steps due deployments until ctx ends.
func (e *Engine) runLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.Poll)
	defer t.Stop()
	for {
		e.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.wake:
		}
	}
}

// tick admits queued deployments, expires approvals and claims what is due.
func (e *Engine) tick(ctx context.Context) {
	now := e.now()
	if err := e.admit(ctx, now); err != nil {
		e.logErr(ctx, "admitting queued deployments", err)
	}
	if expired, err := e.cfg.Store.ApprovalExpire(ctx, now); err != nil {
		e.logErr(ctx, "expiring approvals", err)
	} else {
		for _, a := range expired {
			// The expiry's lines are its deployment's (all the design's fields, its requester's).
			ctx := e.idLogContext(ctx, a.DeploymentID)
			e.log.InfoContext(ctx, "engine: Approval expired", "approvalId", a.ID, "kind", a.Kind, "expiresAt", a.ExpiresAt.UTC())
			e.event(ctx, a.DeploymentID, "approval.expired", "", fmt.Sprintf("approval %s (%s) expired undecided", a.ID, a.Kind), nil)
			if _, err := e.cfg.Store.AuditInsert(ctx, &store.AuditInsertParams{
				At: now, Actor: "slipway-manager", Action: "approval.expire", TargetKind: "approval", TargetName: a.ID,
				Result: audit.Success, Details: fmt.Sprintf("deployment %s: %s expired undecided at %s", a.DeploymentID, a.Kind, a.ExpiresAt.Format(time.RFC3339)),
			}); err != nil {
				e.logErr(ctx, "auditing the expiry of approval "+a.ID, err)
			}
			e.touch(ctx, a.DeploymentID)
		}
	}
	e.setGauges(ctx)

	e.mu.Lock()
	free := e.cfg.MaxConcurrent + 5 - len(e.working)
	e.mu.Unlock()
	if free <= 0 {
		return
	}
	claimed, err := e.cfg.Store.DeploymentClaim(ctx, &store.DeploymentClaimParams{
		Owner: e.cfg.ReplicaID, Now: now, Lease: e.cfg.Lease, Limit: free,
	})
	if err != nil {
		e.logErr(ctx, "claiming deployments", err)
		return
	}
	for _, d := range claimed {
		e.mu.Lock()
		if e.working[d.ID] {
			e.mu.Unlock()
			continue
		}
		e.working[d.ID] = true
		e.mu.Unlock()
		e.wg.Go(func() {
			defer func() {
				e.mu.Lock()
				delete(e.working, d.ID)
				e.mu.Unlock()
			}()
			e.work(ctx, d)
		})
	}
}

// touch makes a deployment due now (something it waits for changed).
func (e *Engine) touch(ctx context.Context, id string) {
	_, err := e.cfg.Store.DeploymentUpdate(ctx, id, func(d *store.Deployment) error {
		now := e.now()
		if d.NextRunAt == nil || d.NextRunAt.After(now) {
			d.NextRunAt = &now
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		e.logErr(e.idLogContext(ctx, id), "waking deployment "+id, err)
	}
}

// work runs a claimed deployment's steps while they follow each other without waiting, renewing
// the claim meanwhile, then releases it with the time it is due again.
func (e *Engine) work(ctx context.Context, d *store.Deployment) {
	ctx, cancel := context.WithCancel(logContext(ctx, d)) // its log lines are the deployment's
	defer cancel()
	renewed := make(chan struct{})
	id := d.ID // the steps below replace d as they read it again
	go func() {
		defer close(renewed)
		e.renew(ctx, id, cancel)
	}()
	defer func() { cancel(); <-renewed }()

	var wait time.Duration
	var err error
	for i := 0; i < maxStepsPerClaim; i++ {
		wait, err = e.advance(ctx, d)
		if err != nil || wait != 0 {
			break
		}
		if d, err = e.cfg.Store.DeploymentGetByID(ctx, d.ID); err != nil {
			break
		}
	}
	switch {
	case errors.Is(err, errLostClaim):
		e.log.InfoContext(ctx, "engine: Claim lost; another replica goes on")
		return
	case ctx.Err() != nil:
		return // stopping: the lease lapses and another replica resumes
	case err != nil:
		e.log.WarnContext(ctx, "engine: Step failed; retrying", "status", d.Status, "error", err)
		e.event(ctx, d.ID, "step.retry", "", "step failed, retrying in "+retryDelay.String()+": "+err.Error(), nil)
		wait = retryDelay
	}
	e.release(ctx, d, wait)
}

// renew extends the claim every third of the lease until ctx ends; a lost claim cancels the step.
func (e *Engine) renew(ctx context.Context, id string, lost context.CancelFunc) {
	t := time.NewTicker(e.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := e.cfg.Store.DeploymentRenew(ctx, id, e.cfg.ReplicaID, e.now().Add(e.cfg.Lease))
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			e.log.WarnContext(ctx, "engine: Claim taken over; stopping the step")
			lost()
			return
		}
		if err != nil && ctx.Err() == nil {
			e.logErr(ctx, "renewing the claim on "+id, err)
		}
	}
}

// release gives the claim up: due again after wait (wait < 0: nothing left to do). seen is the
// deployment as the last step started from: one whose status another writer changed meanwhile
// (admission moves Queued to Planning), or that was paused or resumed meanwhile, is due at
// once, so no change is slept through.
func (e *Engine) release(ctx context.Context, seen *store.Deployment, wait time.Duration) {
	ctx = context.WithoutCancel(ctx)
	id := seen.ID
	_, err := e.cfg.Store.DeploymentUpdate(ctx, id, func(d *store.Deployment) error {
		if d.ClaimedBy != e.cfg.ReplicaID {
			return errLostClaim
		}
		d.ClaimedBy, d.LeaseUntil = "", nil
		switch {
		case pendingRequest(d), d.Status == store.DeploymentPlanning && seen.Status == store.DeploymentQueued,
			(d.PausedAt == nil) != (seen.PausedAt == nil):
			// Asked to cancel, roll back, pause or resume while this step ran: due at once.
			now := e.now()
			d.NextRunAt = &now
		case wait < 0:
			d.NextRunAt = nil
		default:
			next := e.now().Add(wait)
			d.NextRunAt = &next
		}
		return nil
	})
	if err != nil && !errors.Is(err, errLostClaim) {
		e.logErr(ctx, "releasing deployment "+id, err) // ctx is work's: the deployment's lines
	}
}

// admit moves queued deployments on within the concurrency limit, each with its "admitted"
// event in the same transaction (the move from Queued is told by it).
func (e *Engine) admit(ctx context.Context, now time.Time) error {
	return store.WithTx(ctx, e.cfg.Store, func(ctx context.Context, tx store.Tx) error {
		res, err := tx.DeploymentAdmit(ctx, &store.DeploymentAdmitParams{Limit: e.cfg.MaxConcurrent, Now: now})
		if err != nil {
			return err
		}
		for _, id := range res.Admitted {
			msg := fmt.Sprintf("admitted: %d of at most %d deployments running", res.Running, e.cfg.MaxConcurrent)
			if _, err := tx.DeploymentEventInsert(ctx, e.newEvent(id, "admitted", "", msg, nil)); err != nil {
				return err
			}
		}
		return nil
	})
}

// update applies fn to the deployment under this replica's claim (fencing: a replica whose
// claim lapsed writes nothing).
func (e *Engine) update(ctx context.Context, id string, fn func(d *store.Deployment) error) (*store.Deployment, error) {
	return e.updateRecording(ctx, id, nil, fn)
}

// updateRecording is update that appends ev (when not nil) to the deployment's history in the
// same transaction (updateNotifying).
func (e *Engine) updateRecording(ctx context.Context, id string, ev *store.DeploymentEvent, fn func(d *store.Deployment) error) (*store.Deployment, error) {
	return e.updateNotifying(context.WithoutCancel(ctx), id, ev, func(d *store.Deployment) error {
		if d.ClaimedBy != e.cfg.ReplicaID {
			return errLostClaim
		}
		return fn(d)
	})
}

func (e *Engine) setGauges(ctx context.Context) {
	counts, err := e.cfg.Store.DeploymentCountByStatus(ctx)
	if err != nil {
		return
	}
	m := make(map[string]int, len(counts))
	for s, n := range counts {
		m[string(s)] = n
	}
	telemetry.SetDeployments(m)
}

// logErr writes what failed as an error line; args are more attributes.
func (e *Engine) logErr(ctx context.Context, what string, err error, args ...any) {
	if ctx.Err() != nil {
		return
	}
	e.log.ErrorContext(ctx, "engine: "+what+" failed", append([]any{"error", err}, args...)...)
}

// pendingRequest reports whether the deployment holds an API request the engine has not acted on
// and acts on at once (a switch waits for its stage, so it is not one).
func pendingRequest(d *store.Deployment) bool {
	switch {
	case d.RollbackRequested && d.Status != store.DeploymentRollingBack:
		return true
	case d.CancelRequested:
		return !d.Status.Terminal() && d.Status != store.DeploymentRollingBack
	}
	return false
}
