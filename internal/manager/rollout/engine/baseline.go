package engine

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// captureBaseline captures the operator's baseline on a cluster as a deployment starts there,
// before its install: the previous version's resources and metrics, stored so that every check
// of the deployment (on any replica) compares with them. A baseline that cannot be captured is an
// event, not a failure: the checks then compare with the last Healthy one, or with none.
func (e *Engine) captureBaseline(ctx context.Context, d *store.Deployment, c *store.DeploymentCluster, cfg *rest.Config, crds []string) {
	if _, err := e.baseline(ctx, d.OperatorName, c.ClusterName, d.ID); err == nil {
		return // an earlier attempt captured it, before anything was installed
	}
	t := health.Target{OperatorName: d.OperatorName, Namespace: c.Namespace, Release: c.Release, CRDs: crds}
	b, err := e.cfg.Checker.Capture(ctx, c.ClusterName, cfg, t)
	if err == nil {
		b.Source, b.DeploymentID = health.BaselineDeploymentStart, d.ID
		if last, lerr := e.baseline(ctx, d.OperatorName, c.ClusterName, ""); lerr == nil && last.Metrics != nil {
			b.Before = last.Metrics
		}
		err = e.storeBaseline(ctx, d.OperatorName, c.ClusterName, b)
	}
	if err != nil {
		e.clusterEvent(ctx, d, c, "cluster.baseline", "no baseline captured: "+err.Error()+"; checks compare with the last Healthy one, if any")
		return
	}
	s := b.Summary()
	metrics := "metrics read"
	if !s.Metrics {
		metrics = "metrics not read"
	}
	e.clusterEvent(ctx, d, c, "cluster.baseline", fmt.Sprintf("baseline captured before the install: %d resources, %d failing; %s", s.Resources, s.Failing, metrics))
}

// baselineRefreshEvery is how old the last Healthy baseline gets before a Healthy check of the
// health loop replaces it: a metrics window then spans minutes of reconciles (a quiet operator's
// 30 s may hold too few to judge a rate), and a release's baseline is written once in that time,
// not at every check.
const baselineRefreshEvery = 5 * time.Minute

// checkLiveRelease is checkOne for the health loop: a Healthy check becomes the operator's last
// Healthy baseline on the cluster (what it saw, with the previous one's metrics as the window
// before) when the stored one is baselineRefreshEvery old, or there is none. While there is none,
// a Degraded check becomes it too: without a baseline the metrics are not compared, and a rate
// that is merely high since the process started keeps the check Degraded, which would otherwise
// never end.
func (e *Engine) checkLiveRelease(ctx context.Context, deploymentID, operator, cluster, alert string, t health.Target) (checkResult, error) {
	compare, last, rerr := e.baselines(ctx, operator, cluster)
	if rerr != nil {
		e.logErr(clusterContext(ctx, cluster), "health: reading the baselines of "+operator, rerr)
	}
	t.Baseline = compare
	res, err := e.checkOne(ctx, deploymentID, operator, cluster, alert, t)
	switch {
	case err != nil || rerr != nil || res.health.Observed == nil || res.health.Health == api.Unhealthy:
		return res, err
	case last != nil && res.health.Health != api.Healthy:
		return res, nil
	case last != nil && res.health.Observed.CapturedAt.Sub(last.CapturedAt) < baselineRefreshEvery:
		return res, nil
	}
	b := res.health.Observed
	b.Source = health.BaselineLastHealthy
	if last != nil {
		b.Before = last.Metrics
	}
	if err := e.storeBaseline(ctx, operator, cluster, b); err != nil {
		e.logErr(clusterContext(ctx, cluster), "health: storing the last Healthy baseline of "+operator, err)
	}
	return res, nil
}

// baselineFor is the baseline a check of the operator on the cluster compares with: the newer of
// the newest deployment's (captured as it started on the cluster: the version it replaced) and
// the health loop's last Healthy check's. During a deployment the health loop does not check its
// clusters, so its own baseline is the newer, for its checks and for the check of what a rollback
// restored; after it, the first Healthy check of the health loop takes over. nil when there is
// none (or it cannot be read: logged).
func (e *Engine) baselineFor(ctx context.Context, operator, cluster string) *health.Baseline {
	b, _, err := e.baselines(ctx, operator, cluster)
	if err != nil {
		e.logErr(clusterContext(ctx, cluster), "health: reading the baseline of "+operator, err)
	}
	return b
}

// baselines reads the operator's stored baselines on the cluster (at most two) in one query: the
// one a check compares with (the newer: baselineFor) and the last Healthy one (nil when none).
func (e *Engine) baselines(ctx context.Context, operator, cluster string) (compare, lastHealthy *health.Baseline, err error) {
	recs, err := e.cfg.Store.OperatorBaselineList(ctx, &store.OperatorBaselineListParams{OperatorName: operator, ClusterName: cluster})
	if err != nil {
		return nil, nil, err
	}
	for i, r := range recs {
		b, err := health.DecodeBaseline(r.Data)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			compare = b
		}
		if r.DeploymentID == "" {
			lastHealthy = b
		}
	}
	return compare, lastHealthy, nil
}

// baseline reads one stored baseline (deploymentID "" for the last Healthy one).
func (e *Engine) baseline(ctx context.Context, operator, cluster, deploymentID string) (*health.Baseline, error) {
	rec, err := e.cfg.Store.OperatorBaselineGet(ctx, &store.OperatorBaselineGetParams{OperatorName: operator, ClusterName: cluster, DeploymentID: deploymentID})
	if err != nil {
		return nil, err
	}
	return health.DecodeBaseline(rec.Data)
}

func (e *Engine) storeBaseline(ctx context.Context, operator, cluster string, b *health.Baseline) error {
	data, err := health.EncodeBaseline(b)
	if err != nil {
		return err
	}
	_, err = e.cfg.Store.OperatorBaselinePut(ctx, &store.OperatorBaselinePutParams{OperatorName: operator, ClusterName: cluster,
		DeploymentID: b.DeploymentID, Source: b.Source, CapturedAt: b.CapturedAt, Data: data})
	return err
}
