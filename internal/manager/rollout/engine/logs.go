package engine

import (
	"context"
	"log/slog"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// logContext is ctx whose log lines are d's: each carries the design's log fields (deploymentId,
// operatorName, version, cluster, userId: the caller who asked for the deployment, traceId).
func logContext(ctx context.Context, d *store.Deployment) context.Context {
	return telemetry.WithDeployment(ctx, telemetry.Deployment{ID: d.ID, Operator: d.OperatorName, Version: d.Version, UserID: d.RequestedBy})
}

// logClusterEvent writes a cluster's step (install, adoption, switch, failure) as a log line of
// the deployment naming the cluster: Warning for a failure, Info otherwise.
func (e *Engine) logClusterEvent(ctx context.Context, d *store.Deployment, cluster, typ, msg string) {
	level := slog.LevelInfo
	if strings.HasSuffix(typ, ".failed") {
		level = slog.LevelWarn
	}
	e.log.Log(telemetry.WithCluster(logContext(ctx, d), cluster), level, "engine: "+typ, "detail", msg)
}

// clusterContext is ctx whose deployment log lines name cluster (the work of one cluster).
func clusterContext(ctx context.Context, cluster string) context.Context {
	return telemetry.WithCluster(ctx, cluster)
}

// liveLogContext is ctx whose log lines are those of the deployment that installed r (the
// health loop's check of a live release), naming r's cluster. It reads the deployment for its
// requester (userId); when that fails, the line still names the deployment, operator and version.
func (e *Engine) liveLogContext(ctx context.Context, op *store.Operator, r *store.LiveRelease) context.Context {
	ctx = clusterContext(ctx, r.ClusterName)
	if d, err := e.cfg.Store.DeploymentGetByID(ctx, r.DeploymentID); err == nil {
		return logContext(ctx, d)
	}
	return telemetry.WithDeployment(ctx, telemetry.Deployment{ID: r.DeploymentID, Operator: op.Name, Version: r.Version})
}
