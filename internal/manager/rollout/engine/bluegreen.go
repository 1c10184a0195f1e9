package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// switchStage is BlueGreen's last stage: once green is validated everywhere (and, with
// autoSwitch false, a switch was asked for), every cluster's webhooks point to green and blue's
// controllers scale to 0; green is then watched for the stage's hold (the design's 5 minutes).
func (e *Engine) switchStage(ctx context.Context, d *store.Deployment, op *store.Operator, plan *strategy.Plan, st *strategy.Stage) (time.Duration, error) {
	if d.SwitchedAt == nil {
		if st.WaitForSwitch && !d.SwitchRequested {
			if d.Reason != waitingSwitch {
				_, err := e.update(ctx, d.ID, func(d *store.Deployment) error { d.Reason = waitingSwitch; return nil })
				e.event(ctx, d.ID, "switch.waiting", "", waitingSwitch, nil)
				return approvalPoll, err
			}
			return approvalPoll, nil // a switch asked on any replica is seen within approvalPoll
		}
		if failed := e.switchAll(ctx, d); len(failed) > 0 {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			// Switched clusters are switched back by the rollback (SwitchedAt is set below first).
			return e.startRollback(ctx, d, "install failed: switch to green on "+strings.Join(failed, "; "))
		}
		return 0, nil
	}
	return e.hold(ctx, d, op, plan, st)
}

const waitingSwitch = "green validated on every cluster; waiting for POST /api/v1/deployments/{id}/switch"

// switchAll switches every cluster to green. SwitchedAt is written before the first switch, so
// a rollback after a crash mid-way switches back every cluster (switching back is idempotent).
func (e *Engine) switchAll(ctx context.Context, d *store.Deployment) []string {
	now := e.now()
	if _, err := e.update(ctx, d.ID, func(d *store.Deployment) error {
		d.SwitchedAt, d.SwitchRequested, d.StageStartedAt = &now, false, nil
		d.Reason = "switching to green"
		return nil
	}); err != nil {
		return []string{err.Error()}
	}
	d.SwitchedAt = &now
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, checkConcurrency)
	for _, c := range d.Clusters {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := e.switchOne(ctx, d, c); err != nil {
				mu.Lock()
				failed = append(failed, c.ClusterName+": "+err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Strings(failed)
	return failed
}

func (e *Engine) switchOne(ctx context.Context, d *store.Deployment, c *store.DeploymentCluster) error {
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, c.ClusterName)
	if err != nil {
		return err
	}
	free, err := e.slot(ctx)
	if err != nil {
		return err
	}
	defer free()
	sctx, cancel := context.WithTimeout(ctx, e.cfg.InstallTimeout)
	defer cancel()
	res, err := install.Switch(sctx, cfg, install.Side{Namespace: c.BlueNamespace, Release: c.BlueRelease},
		install.Side{Namespace: c.Namespace, Release: c.Release})
	if err != nil {
		return err
	}
	e.clusterEvent(ctx, d, c, "cluster.switched", fmt.Sprintf("switched to green %s/%s: %d webhook(s), %d CRD conversion(s) re-pointed, %d workload(s) of blue %s/%s scaled to 0",
		c.Namespace, c.Release, res.Webhooks, res.CRDs, res.Scaled, c.BlueNamespace, c.BlueRelease))
	return nil
}

// completedWork is what remains after a deployment completed: BlueGreen deletes blue once its
// retention is over (until then blue is the instant rollback target).
func (e *Engine) completedWork(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	if d.BlueDeleteAt == nil || d.BlueDeleted {
		return -1, nil
	}
	if wait := d.BlueDeleteAt.Sub(e.now()); wait > 0 {
		return wait, nil
	}
	var failed []string
	for _, c := range d.Clusters {
		if c.BlueRelease == "" {
			continue
		}
		cfg, err := e.cfg.Clusters.RESTConfig(ctx, c.ClusterName)
		if err == nil {
			err = install.Uninstall(ctx, cfg, c.BlueRelease, c.BlueNamespace)
		}
		if err != nil {
			failed = append(failed, c.ClusterName+": "+err.Error())
			continue
		}
		e.clusterEvent(ctx, d, c, "blue.deleted", fmt.Sprintf("blue %s/%s removed after %s (CRDs and custom resources kept)", c.BlueNamespace, c.BlueRelease, e.cfg.BlueRetention))
	}
	if len(failed) > 0 {
		return 0, fmt.Errorf("removing blue: %s", strings.Join(failed, "; "))
	}
	_, err := e.update(ctx, d.ID, func(d *store.Deployment) error { d.BlueDeleted = true; return nil })
	return -1, err
}
