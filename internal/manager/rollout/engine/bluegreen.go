package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/words"
)

// switchStage is BlueGreen's last stage: once green is validated everywhere (and, with
// autoSwitch false, a switch was asked for), every cluster's webhooks point to green and blue's
// controllers scale to 0; green is then watched for the stage's hold (the design's 5 minutes).
func (e *Engine) switchStage(ctx context.Context, d *store.Deployment, op *store.Operator, plan *strategy.Plan, spec *request.Spec, st *strategy.Stage) (time.Duration, error) {
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
	return e.hold(ctx, d, op, plan, spec, st)
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
	ctx = clusterContext(ctx, c.ClusterName)
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
	e.clusterEvent(ctx, d, c, "cluster.switched", fmt.Sprintf("switched to green %s/%s: %s, %s re-pointed, %s of blue %s/%s scaled to 0",
		c.Namespace, c.Release, words.Count(res.Webhooks, "webhook"), words.Count(res.CRDs, "CRD conversion"),
		words.Count(res.Scaled, "workload"), c.BlueNamespace, c.BlueRelease))
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

// restoreOntoGreen rolls back a BlueGreen deployment whose blue was deleted after its retention:
// green is the live release, so it goes back as an upgrade does, to the chart version and values
// of the release blue was (the deployment that installed it). That deployment's record then
// points to green, where its version now runs, so the health loop and the next deployment find
// it there. Without that deployment (planning refuses a BlueGreen without one, so only a record
// changed meanwhile) it is an error: nothing says what blue ran.
func (e *Engine) restoreOntoGreen(ctx context.Context, cfg *rest.Config, d *store.Deployment, op *store.Operator, c *store.DeploymentCluster) (string, restoredRelease, error) {
	prev, err := e.releaseBefore(ctx, d, c.ClusterName)
	if err != nil {
		return "", restoredRelease{}, err
	}
	if prev == nil {
		return "", restoredRelease{}, fmt.Errorf("blue %s/%s was deleted after its retention and no earlier deployment of the manager installed it, so its version and values are unknown: deploy the version wanted instead",
			c.BlueNamespace, c.BlueRelease)
	}
	back := restoredRelease{namespace: c.Namespace, release: c.Release, version: prev.Version}
	spec, err := request.FromDeployment(prev)
	if err != nil {
		return "", back, err
	}
	values, err := e.valuesFor(ctx, prev, spec, string(c.Environment))
	if err != nil {
		return "", back, err
	}
	ch, err := e.chartOf(ctx, op, prev.Version)
	if err != nil {
		return "", back, err
	}
	e.warnIncompatible(ctx, cfg, d, op, c, prev.Version)
	own, err := ch.installable()
	if err != nil {
		return "", back, err
	}
	res, err := install.Install(ctx, cfg, install.Release{Name: c.Release, Namespace: c.Namespace, Chart: own, Values: values, Timeout: e.cfg.InstallTimeout})
	if err != nil {
		return "", back, err
	}
	if _, err := e.cfg.Store.DeploymentUpdate(context.WithoutCancel(ctx), prev.ID, func(p *store.Deployment) error {
		if pc := clusterByName(p, c.ClusterName); pc != nil {
			pc.Namespace, pc.Release, pc.HelmRevision = c.Namespace, c.Release, res.Revision
			pc.Message = fmt.Sprintf("moved to %s/%s (revision %d) by the rollback of deployment %s, after blue was deleted", c.Namespace, c.Release, res.Revision, d.ID)
		}
		return nil
	}); err != nil {
		return "", back, fmt.Errorf("recording that deployment %s's release now is %s/%s: %w", prev.ID, c.Namespace, c.Release, err)
	}
	return fmt.Sprintf("blue was deleted after its retention: %s/%s rolled back to %s with the values of deployment %s (revision %d)",
		c.Namespace, c.Release, prev.Version, prev.ID, res.Revision), back, nil
}

// releaseBefore is the deployment whose release on cluster was live before d: the newest one
// created before d with a healthy row there (nil: none).
func (e *Engine) releaseBefore(ctx context.Context, d *store.Deployment, cluster string) (*store.Deployment, error) {
	seen := false
	p := &store.DeploymentListParams{OperatorID: d.OperatorID, Limit: 100}
	for {
		page, err := e.cfg.Store.DeploymentList(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, x := range page {
			if x.ID == d.ID {
				seen = true
				continue
			}
			if c := clusterByName(x, cluster); seen && c != nil && c.Status == store.ClusterHealthy {
				return x, nil
			}
		}
		if len(page) < p.Limit {
			return nil, nil
		}
		p.Before = page[len(page)-1].ID
	}
}
