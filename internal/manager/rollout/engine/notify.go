package engine

import (
	"context"

	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Notifications learns the changes people are told about (notifications.Service), inside the
// transaction that records each: a notification is stored exactly when its cause is.
type Notifications interface {
	// DeploymentStatus: the deployment d moved from status from to d.Status.
	DeploymentStatus(ctx context.Context, tx store.Executor, from store.DeploymentStatus, d *store.Deployment) error
	// OperatorHealth: a health check was recorded; problems is its problems in one line, alert
	// why failed checks of it only alert ("": they roll its deployment back; RollbackScope).
	OperatorHealth(ctx context.Context, tx store.Executor, rec *store.OperatorHealth, problems, alert string) error
}

// updateNotifying is the store's DeploymentUpdate, telling Notifications in the same
// transaction when fn changed the status, and appending ev (when not nil) to the deployment's
// history in it too: a status and the event that tells it commit together, so a reader that
// sees the status finds its event (a page that lists the events once the deployment has ended,
// a stream that ends on a terminal status) and a crash between the two leaves neither.
func (e *Engine) updateNotifying(ctx context.Context, id string, ev *store.DeploymentEvent, fn func(d *store.Deployment) error) (*store.Deployment, error) {
	if e.cfg.Notifications == nil && ev == nil {
		return e.cfg.Store.DeploymentUpdate(ctx, id, fn)
	}
	return store.WithTxV(ctx, e.cfg.Store, func(ctx context.Context, tx store.Tx) (*store.Deployment, error) {
		var from store.DeploymentStatus
		d, err := tx.DeploymentUpdate(ctx, id, func(d *store.Deployment) error {
			from = d.Status
			return fn(d)
		})
		if err != nil {
			return nil, err
		}
		if ev != nil {
			if _, err := tx.DeploymentEventInsert(ctx, ev); err != nil {
				return nil, err
			}
		}
		return d, e.notifyStatus(ctx, tx, from, d)
	})
}

// notifyStatus tells Notifications, through tx, that d moved from from to its status.
func (e *Engine) notifyStatus(ctx context.Context, tx store.Executor, from store.DeploymentStatus, d *store.Deployment) error {
	if e.cfg.Notifications == nil || d == nil || from == d.Status {
		return nil
	}
	return e.cfg.Notifications.DeploymentStatus(ctx, tx, from, d)
}

// recordHealth stores a health check, telling Notifications in the same transaction.
func (e *Engine) recordHealth(ctx context.Context, h health.Result, p *store.OperatorHealthRecordParams, alert string) (*store.OperatorHealth, error) {
	if e.cfg.Notifications == nil {
		return e.cfg.Store.OperatorHealthRecord(ctx, p)
	}
	return store.WithTxV(ctx, e.cfg.Store, func(ctx context.Context, tx store.Tx) (*store.OperatorHealth, error) {
		rec, err := tx.OperatorHealthRecord(ctx, p)
		if err != nil {
			return nil, err
		}
		return rec, e.cfg.Notifications.OperatorHealth(ctx, tx, rec, summary(h), alert)
	})
}
