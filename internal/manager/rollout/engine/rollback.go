package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// startRollback moves the deployment to RollingBack: its clusters go back to what they ran
// before it (new deployments of the operator wait meanwhile: DeploymentAdmit skips it). A
// Completed deployment takes its clusters back (active again); a newer deployment active on one
// of them refuses it (the request is dropped with an event).
func (e *Engine) startRollback(ctx context.Context, d *store.Deployment, reason string) (time.Duration, error) {
	now := e.now()
	from := d.Status
	_, err := e.update(ctx, d.ID, func(d *store.Deployment) error {
		d.Status, d.Reason = store.DeploymentRollingBack, "rolling back: "+reason
		d.RollbackRequested, d.RollbackReason, d.RollbackStartedAt, d.RollbackFinishedAt = false, reason, &now, nil
		for _, c := range d.Clusters {
			// The clusters to restore are this deployment's again (a finished one had let them go).
			c.Active = c.Status != store.ClusterRolledBack && c.Status != store.ClusterSkipped
		}
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		msg := "rollback refused: a newer deployment of the operator is active on one of its clusters"
		_, uerr := e.update(ctx, d.ID, func(d *store.Deployment) error {
			d.RollbackRequested, d.Reason = false, msg
			return nil
		})
		e.event(ctx, d.ID, "rollback.refused", "", msg, nil)
		return -1, uerr
	}
	if err != nil {
		return 0, err
	}
	e.event(ctx, d.ID, "status", "", fmt.Sprintf("%s → RollingBack: %s", from, reason), map[string]any{"from": from, "to": store.DeploymentRollingBack})
	e.log.WarnContext(ctx, "engine: Rolling back", "deployment", d.ID, "operator", d.OperatorName, "version", d.Version, "reason", reason)
	return 0, nil
}

// rollingBack restores every cluster the deployment touched: a BlueGreen switch is switched
// back, an upgrade rolled back to the revision before it, a first install uninstalled (CRDs and
// custom resources are never deleted or rewritten). Then the restored releases are checked.
func (e *Engine) rollingBack(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	ctx, span := telemetry.Tracer().Start(ctx, "operator.rollback")
	defer span.End()
	span.SetAttributes(attribute.String("deployment", d.ID), attribute.String("operator", d.OperatorName))
	op, err := e.operatorOf(ctx, d)
	if err != nil {
		return 0, err
	}
	var failed []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, checkConcurrency)
	for _, c := range d.Clusters {
		if c.Status == store.ClusterRolledBack || c.Status == store.ClusterSkipped {
			continue
		}
		if c.InstallAttempts == 0 && c.HelmRevision == 0 {
			if _, err := e.update(ctx, d.ID, func(d *store.Deployment) error {
				cur := clusterByName(d, c.ClusterName)
				cur.Status, cur.Message = store.ClusterSkipped, "not installed before the rollback"
				return nil
			}); err != nil {
				return 0, err
			}
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := e.restore(ctx, d, op, c); err != nil {
				mu.Lock()
				failed = append(failed, c.ClusterName+": "+err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return e.finishRollback(ctx, d, store.DeploymentFailed, "rollback failed on "+strings.Join(failed, "; "))
	}
	return e.finishRollback(ctx, d, store.DeploymentRolledBack, "rolled back: "+d.RollbackReason)
}

// restore puts one cluster back and checks the restored release.
func (e *Engine) restore(ctx context.Context, d *store.Deployment, op *store.Operator, c *store.DeploymentCluster) error {
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, c.ClusterName)
	if err != nil {
		return e.restoreFailed(ctx, d, c, err)
	}
	free, err := e.slot(ctx)
	if err != nil {
		return err
	}
	defer free()
	rctx, cancel := context.WithTimeout(ctx, e.cfg.InstallTimeout)
	defer cancel()
	var msg string
	switch {
	case d.SwitchedAt != nil && c.BlueRelease != "":
		// BlueGreen after the switch: blue is still there; switch back, then remove green.
		if _, err := install.SwitchBack(rctx, cfg, install.Side{Namespace: c.BlueNamespace, Release: c.BlueRelease},
			install.Side{Namespace: c.Namespace, Release: c.Release}); err != nil {
			return e.restoreFailed(ctx, d, c, err)
		}
		if err := install.Uninstall(rctx, cfg, c.Release, c.Namespace); err != nil {
			return e.restoreFailed(ctx, d, c, err)
		}
		msg = fmt.Sprintf("switched back to %s/%s; green removed", c.BlueNamespace, c.BlueRelease)
	case c.PreviousRevision > 0:
		e.warnIncompatible(ctx, cfg, d, op, c)
		cur, err := install.Status(rctx, cfg, c.Release, c.Namespace)
		if err != nil {
			return e.restoreFailed(ctx, d, c, err)
		}
		if cur.ChartVersion == c.PreviousVersion && cur.Status == "deployed" && cur.Revision > c.HelmRevision && c.HelmRevision > 0 {
			msg = fmt.Sprintf("already back at %s (revision %d)", c.PreviousVersion, cur.Revision)
			break
		}
		res, err := install.Rollback(rctx, cfg, c.Release, c.Namespace, c.PreviousRevision)
		if err != nil {
			return e.restoreFailed(ctx, d, c, err)
		}
		msg = fmt.Sprintf("rolled back to %s (revision %d as %d)", c.PreviousVersion, c.PreviousRevision, res.Revision)
	default:
		if err := install.Uninstall(rctx, cfg, c.Release, c.Namespace); err != nil {
			return e.restoreFailed(ctx, d, c, err)
		}
		msg = "first install removed (CRDs and custom resources kept)"
	}
	if h, ok := e.checkRestored(ctx, cfg, d, op, c); !ok {
		return e.restoreFailed(ctx, d, c, fmt.Errorf("%s, but the restored release is unhealthy: %s", msg, summary(h)))
	}
	_, err = e.update(ctx, d.ID, func(d *store.Deployment) error {
		cur := clusterByName(d, c.ClusterName)
		cur.Status, cur.Message = store.ClusterRolledBack, msg
		return nil
	})
	if err == nil {
		e.clusterEvent(ctx, d, c, "cluster.rolledBack", msg)
	}
	return err
}

// checkRestored checks the release a cluster went back to (none after an uninstall): it must
// not be Unhealthy. A check that cannot run does not fail the rollback.
func (e *Engine) checkRestored(ctx context.Context, cfg *rest.Config, d *store.Deployment, op *store.Operator, c *store.DeploymentCluster) (health.ClusterHealth, bool) {
	ns, rel, version := c.Namespace, c.Release, c.PreviousVersion
	if d.SwitchedAt != nil && c.BlueRelease != "" {
		ns, rel = c.BlueNamespace, c.BlueRelease
	}
	if version == "" {
		return health.ClusterHealth{}, true
	}
	ch, err := e.chartOf(ctx, op, version)
	if err != nil {
		return health.ClusterHealth{}, true
	}
	h, err := e.cfg.Checker.Check(ctx, c.ClusterName, cfg, health.Target{OperatorName: op.Name, Namespace: ns, Release: rel, CRDs: ch.crds})
	if err != nil {
		return health.ClusterHealth{}, true
	}
	return h, h.Health != health.Unhealthy
}

// warnIncompatible checks the custom resources stored now against the previous version's CRD
// schemas. CRDs are not changed by a rollback (the newer schema stays, so nothing stored
// becomes invalid), but an older controller may not understand what the newer one wrote: an
// event says so.
func (e *Engine) warnIncompatible(ctx context.Context, cfg *rest.Config, d *store.Deployment, op *store.Operator, c *store.DeploymentCluster) {
	if c.PreviousVersion == "" {
		return
	}
	ch, err := e.chartOf(ctx, op, c.PreviousVersion)
	if err != nil {
		return
	}
	for _, def := range ch.defs {
		ex, err := crds.ValidateExisting(ctx, cfg, def)
		if err != nil || ex == nil || len(ex.Invalid) == 0 {
			continue
		}
		e.clusterEvent(ctx, d, c, "rollback.crdWarning", fmt.Sprintf("%d of %d %s would not validate against %s's schema; the CRD keeps the newer schema",
			len(ex.Invalid), ex.Objects, def.Name, c.PreviousVersion))
	}
}

func (e *Engine) restoreFailed(ctx context.Context, d *store.Deployment, c *store.DeploymentCluster, cause error) error {
	msg := "rollback failed: " + cause.Error()
	if _, err := e.update(ctx, d.ID, func(d *store.Deployment) error {
		cur := clusterByName(d, c.ClusterName)
		cur.Status, cur.Message = store.ClusterFailed, msg
		return nil
	}); err != nil {
		return err
	}
	e.clusterEvent(ctx, d, c, "cluster.rollbackFailed", msg)
	return cause
}

// finishRollback ends the rollback RolledBack or Failed.
func (e *Engine) finishRollback(ctx context.Context, d *store.Deployment, status store.DeploymentStatus, reason string) (time.Duration, error) {
	now := e.now()
	if _, err := e.transition(ctx, d, status, reason, func(d *store.Deployment) { d.RollbackFinishedAt = &now }); err != nil {
		return 0, err
	}
	result := "rolledBack"
	if status == store.DeploymentFailed {
		result = "failed"
		telemetry.OperatorsFailedTotal.WithLabelValues("rollback").Inc()
	}
	if d.RollbackStartedAt != nil {
		telemetry.ObserveRollback(triggerOf(d.RollbackReason), result, now.Sub(*d.RollbackStartedAt))
	}
	for _, c := range d.Clusters {
		if err := e.cfg.Store.OperatorHealthDelete(ctx, d.OperatorName, c.ClusterName); err != nil {
			e.logErr(ctx, "forgetting health of "+c.ClusterName, err)
		}
	}
	return -1, nil
}

// triggerOf names what started a rollback, from its reason (the metric's label).
func triggerOf(reason string) string {
	switch {
	case strings.HasPrefix(reason, "manual"):
		return "manual"
	case strings.HasPrefix(reason, "health check"):
		return "healthcheck"
	case strings.HasPrefix(reason, "stage"):
		return "stage"
	case strings.HasPrefix(reason, "install"):
		return "install"
	}
	return "other"
}
