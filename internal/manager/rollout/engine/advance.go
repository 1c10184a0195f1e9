package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// advance runs the deployment's next step and persists it. It returns how long until the
// deployment is due again: 0 at once, < 0 never (until something asks). The step's span is a
// child of the request that created the deployment (its stored trace context): a deployment is
// one trace, across steps and replicas.
func (e *Engine) advance(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	ctx, span := telemetry.Tracer().Start(telemetry.WithTraceContext(ctx, d.TraceContext), telemetry.SpanOperatorDeploy)
	defer span.End()
	span.SetAttributes(attribute.String("deployment", d.ID), attribute.String("operator", d.OperatorName),
		attribute.String("version", d.Version), attribute.String("strategy", d.Strategy), attribute.String("status", string(d.Status)))
	wait, err := e.step(ctx, d)
	if err != nil && !errors.Is(err, errLostClaim) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return wait, err
}

func (e *Engine) step(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	if d.RollbackRequested && d.Status != store.DeploymentRollingBack {
		return e.startRollback(ctx, d, d.RollbackReason)
	}
	if d.CancelRequested && !d.Status.Terminal() && d.Status != store.DeploymentRollingBack {
		return e.cancelDeployment(ctx, d)
	}
	switch d.Status {
	case store.DeploymentQueued:
		return -1, nil // DeploymentAdmit moves it on
	case store.DeploymentPlanning:
		return e.planning(ctx, d)
	case store.DeploymentWaitingApproval:
		return e.waitApproval(ctx, d)
	case store.DeploymentDeploying, store.DeploymentValidating:
		return e.deploying(ctx, d)
	case store.DeploymentRollingBack:
		return e.rollingBack(ctx, d)
	case store.DeploymentCompleted:
		return e.completedWork(ctx, d)
	}
	return -1, nil
}

// operatorOf reads the deployment's operator; a deleted one fails the deployment.
func (e *Engine) operatorOf(ctx context.Context, d *store.Deployment) (*store.Operator, error) {
	return e.cfg.Store.OperatorGetByID(ctx, d.OperatorID)
}

// transition moves the deployment to status with reason (and records the event).
func (e *Engine) transition(ctx context.Context, d *store.Deployment, status store.DeploymentStatus, reason string, fn func(d *store.Deployment)) (*store.Deployment, error) {
	out, err := e.updateRecording(ctx, d.ID, e.statusEvent(d.ID, d.Status, status, reason), func(d *store.Deployment) error {
		d.Status, d.Reason = status, reason
		if fn != nil {
			fn(d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.log.InfoContext(logContext(ctx, d), "engine: Deployment "+string(status), "reason", reason)
	return out, nil
}

// fail ends the deployment Failed at step (planning, approval, install, rollback).
func (e *Engine) fail(ctx context.Context, d *store.Deployment, step, reason string) (time.Duration, error) {
	if _, err := e.transition(ctx, d, store.DeploymentFailed, reason, nil); err != nil {
		return 0, err
	}
	telemetry.OperatorsFailedTotal.WithLabelValues(step).Inc()
	if d.StartedAt != nil {
		telemetry.ObserveDeployment(d.Strategy, string(store.DeploymentFailed), e.now().Sub(*d.StartedAt))
	}
	return -1, nil
}

// cancel ends a deployment that was asked to stop. Installs in flight ran to their end within
// the step that started them, so none is running now.
func (e *Engine) cancelDeployment(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	done := 0
	for _, c := range d.Clusters {
		if c.HelmRevision > 0 {
			done++
		}
	}
	reason := "cancelled before anything was installed"
	if done > 0 {
		reason = fmt.Sprintf("cancelled: %d of %d clusters run %s (roll back to undo)", done, len(d.Clusters), d.Version)
	}
	_, err := e.transition(ctx, d, store.DeploymentCancelled, reason, func(d *store.Deployment) {
		for _, c := range d.Clusters {
			if c.Status == store.ClusterPending || c.Status == store.ClusterInstalling {
				c.Status, c.Message = store.ClusterSkipped, "cancelled"
			}
		}
	})
	return -1, err
}

func (e *Engine) clusterEvent(ctx context.Context, d *store.Deployment, c *store.DeploymentCluster, typ, msg string) {
	e.event(ctx, d.ID, typ, c.ClusterName, msg, nil)
	e.logClusterEvent(ctx, d, c.ClusterName, typ, msg)
}

// clusterByName returns the deployment's row for cluster.
func clusterByName(d *store.Deployment, name string) *store.DeploymentCluster {
	for _, c := range d.Clusters {
		if c.ClusterName == name {
			return c
		}
	}
	return nil
}
