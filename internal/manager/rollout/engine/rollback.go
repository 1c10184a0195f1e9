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

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/crds"
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
	_, err := e.updateRecording(ctx, d.ID, e.statusEvent(d.ID, d.Status, store.DeploymentRollingBack, reason), func(d *store.Deployment) error {
		d.Status, d.Reason = store.DeploymentRollingBack, "rolling back: "+reason
		d.RollbackRequested, d.RollbackReason, d.RollbackStartedAt, d.RollbackFinishedAt = false, reason, &now, nil
		d.PausedAt, d.PausedBy, d.PauseReason = nil, "", "" // a rollback is never paused
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
	if d.PausedAt != nil {
		e.event(ctx, d.ID, "resumed", "", "the pause of "+d.PausedBy+" ends: a rollback is never paused", map[string]any{"by": "slipway-manager", "pausedBy": d.PausedBy})
	}
	e.log.WarnContext(logContext(ctx, d), "engine: Rolling back", "reason", reason)
	return 0, nil
}

// rollingBack restores every cluster the deployment touched: a BlueGreen switch is switched
// back (or, once blue was deleted, the previous version restored onto green), an upgrade rolled
// back to the revision before it, a first install uninstalled (CRDs and custom resources are
// never deleted or rewritten). Then the restored releases are checked.
func (e *Engine) rollingBack(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	ctx, span := telemetry.Tracer().Start(ctx, "operator.rollback")
	defer span.End()
	span.SetAttributes(attribute.String("deployment", d.ID), attribute.String("operator", d.OperatorName))
	op, err := e.operatorOf(ctx, d)
	if err != nil {
		return 0, err
	}
	var failed, notChecked, baseline []string
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
			checked, unhealthyBefore, err := e.restore(ctx, d, op, c)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = append(failed, c.ClusterName+": "+err.Error())
			case !checked:
				notChecked = append(notChecked, c.ClusterName)
			case unhealthyBefore:
				baseline = append(baseline, c.ClusterName)
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
	reason := "rolled back: " + d.RollbackReason
	if len(notChecked) > 0 {
		sort.Strings(notChecked)
		reason += "; health of the restored release not checked on " + strings.Join(notChecked, ", ")
	}
	if len(baseline) > 0 {
		sort.Strings(baseline)
		reason += "; baseline unhealthy on " + strings.Join(baseline, ", ") + ": the version restored there fails the same checks, so the failure is not this version's (the manager goes no further back)"
	}
	return e.finishRollback(ctx, d, store.DeploymentRolledBack, reason)
}

// restore puts one cluster back and checks the restored release. checked is false when that
// check could not run within --install-timeout: the cluster is rolled back, its health not
// checked (message and a rollback.notChecked event say so).
//
// When the restored release is Unhealthy by the same signals that failed the new version, the
// rollback stops there (baseline is true): the cluster is RolledBack with a message saying the
// failure is not the version's, and nothing goes further back.
func (e *Engine) restore(ctx context.Context, d *store.Deployment, op *store.Operator, c *store.DeploymentCluster) (checked, baseline bool, err error) {
	ctx = clusterContext(ctx, c.ClusterName)
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, c.ClusterName)
	if err != nil {
		return false, false, e.restoreFailed(ctx, d, c, err)
	}
	msg, back, err := e.putBack(ctx, cfg, d, op, c)
	if err != nil {
		if ctx.Err() != nil {
			return false, false, ctx.Err()
		}
		return false, false, e.restoreFailed(ctx, d, c, err)
	}
	checked = true
	if back.release != "" {
		h, ran, why, err := e.checkRestored(ctx, cfg, op, c.ClusterName, back)
		switch {
		case err != nil:
			return false, false, err
		case !ran:
			checked = false
			msg += "; health not checked: " + why
		case h.Health == api.Unhealthy:
			same := e.sameFailure(ctx, d, c.ClusterName, h)
			if len(same) == 0 {
				return false, false, e.restoreFailed(ctx, d, c, fmt.Errorf("%s, but the restored release is unhealthy: %s", msg, summary(h)))
			}
			msg += fmt.Sprintf("; %s %s is Unhealthy too, by the same signals that failed %s (%s): the failure is not the version's (baseline unhealthy)",
				d.OperatorName, back.version, d.Version, strings.Join(same, ", "))
			baseline = true
		}
	}
	_, err = e.update(ctx, d.ID, func(d *store.Deployment) error {
		cur := clusterByName(d, c.ClusterName)
		cur.Status, cur.Message = store.ClusterRolledBack, msg
		return nil
	})
	if err != nil {
		return false, false, err
	}
	if !checked {
		e.clusterEvent(ctx, d, c, "rollback.notChecked", fmt.Sprintf("%s/%s (%s) restored, but its health could not be checked: it is not known to be healthy",
			back.namespace, back.release, back.version))
	}
	if baseline {
		e.clusterEvent(ctx, d, c, "rollback.baselineUnhealthy", msg)
	}
	e.clusterEvent(ctx, d, c, "cluster.rolledBack", msg)
	return checked, baseline, nil
}

// putBack does one cluster's Helm work of a rollback, in a slot of --max-parallel-installs and
// within --install-timeout, and returns what it did and the release to check (none after an
// uninstall).
func (e *Engine) putBack(ctx context.Context, cfg *rest.Config, d *store.Deployment, op *store.Operator, c *store.DeploymentCluster) (string, restoredRelease, error) {
	free, err := e.slot(ctx)
	if err != nil {
		return "", restoredRelease{}, err
	}
	defer free()
	rctx, cancel := context.WithTimeout(ctx, e.cfg.InstallTimeout)
	defer cancel()
	switch {
	case d.SwitchedAt != nil && c.BlueRelease != "" && d.BlueDeleted:
		// BlueGreen after blue's retention: green is the live release; roll it back as an upgrade.
		return e.restoreOntoGreen(rctx, cfg, d, op, c)
	case d.SwitchedAt != nil && c.BlueRelease != "":
		// BlueGreen after the switch: blue is still there; switch back, then remove green.
		blue := install.Side{Namespace: c.BlueNamespace, Release: c.BlueRelease}
		if _, err := install.SwitchBack(rctx, cfg, blue, install.Side{Namespace: c.Namespace, Release: c.Release}); err != nil {
			return "", restoredRelease{}, err
		}
		if err := install.Uninstall(rctx, cfg, c.Release, c.Namespace); err != nil {
			return "", restoredRelease{}, err
		}
		back := restoredRelease{namespace: c.BlueNamespace, release: c.BlueRelease}
		if st, err := install.Status(rctx, cfg, c.BlueRelease, c.BlueNamespace); err == nil {
			back.version = st.ChartVersion
		}
		return fmt.Sprintf("switched back to %s/%s; green removed", c.BlueNamespace, c.BlueRelease), back, nil
	case c.PreviousRevision > 0:
		e.warnIncompatible(rctx, cfg, d, op, c, c.PreviousVersion)
		back := restoredRelease{namespace: c.Namespace, release: c.Release, version: c.PreviousVersion}
		cur, err := install.Status(rctx, cfg, c.Release, c.Namespace)
		if err != nil {
			return "", back, err
		}
		if cur.ChartVersion == c.PreviousVersion && cur.Status == "deployed" && cur.Revision > c.HelmRevision && c.HelmRevision > 0 {
			return fmt.Sprintf("already back at %s (revision %d)", c.PreviousVersion, cur.Revision), back, nil
		}
		res, err := install.Rollback(rctx, cfg, c.Release, c.Namespace, c.PreviousRevision)
		if err != nil {
			return "", back, err
		}
		return fmt.Sprintf("rolled back to %s (revision %d as %d)", c.PreviousVersion, c.PreviousRevision, res.Revision), back, nil
	default:
		if err := install.Uninstall(rctx, cfg, c.Release, c.Namespace); err != nil {
			return "", restoredRelease{}, err
		}
		return "first install removed (CRDs and custom resources kept)", restoredRelease{}, nil
	}
}

// warnIncompatible checks the custom resources stored now against version's CRD schemas (the
// version a cluster goes back to). CRDs are not changed by a rollback (the newer schema stays,
// so nothing stored becomes invalid), but an older controller may not understand what the newer
// one wrote: a rollback.crdWarning event names the CRD and the objects. A check that cannot run
// says so in the same event: it is not a pass.
func (e *Engine) warnIncompatible(ctx context.Context, cfg *rest.Config, d *store.Deployment, op *store.Operator, c *store.DeploymentCluster, version string) {
	if version == "" {
		return
	}
	ch, err := e.chartOf(ctx, op, version)
	if err != nil {
		e.clusterEvent(ctx, d, c, "rollback.crdWarning", fmt.Sprintf("custom resources not checked against %s's CRD schemas: %v", version, err))
		return
	}
	for _, def := range ch.defs {
		ex, err := crds.ValidateExisting(ctx, cfg, def)
		if err != nil {
			e.clusterEvent(ctx, d, c, "rollback.crdWarning", fmt.Sprintf("%s: custom resources not checked against %s's schema: %v", def.Name, version, err))
			continue
		}
		if ex == nil || len(ex.Invalid) == 0 {
			continue
		}
		e.clusterEvent(ctx, d, c, "rollback.crdWarning", fmt.Sprintf("%d of %d %s would not validate against %s's schema: %s; the CRD keeps the newer schema and the objects are not changed",
			len(ex.Invalid), ex.Objects, def.Name, version, invalidObjects(ex.Invalid)))
	}
}

// invalidObjects names the first objects of a crdWarning and their first finding.
func invalidObjects(objs []crds.InvalidObject) string {
	const shown = 10
	var out []string
	for i, o := range objs {
		if i == shown {
			out = append(out, fmt.Sprintf("and %d more", len(objs)-shown))
			break
		}
		name := o.Name
		if o.Namespace != "" {
			name = o.Namespace + "/" + o.Name
		}
		if len(o.Errors) > 0 {
			name += " (" + o.Errors[0] + ")"
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
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
