package engine

import (
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// The engine's log lines about a deployment carry the design's nine fields (telemetry.
// WithDeployment). userId is the caller who asked for the work the line is about:
//   - a step the engine runs on its own (planning, installs, health checks, stage verdicts,
//     completion, an automatic rollback, an approval's expiry): the deployment's requester, who
//     asked for the rollout;
//   - the step a decided approval lets go on or stops (Deploying after the last approval, Failed
//     after a rejection): the approver who decided it (asked);
//   - the pause taking hold: the user who paused it (store.Deployment.PausedBy);
//   - work done inside an API request (Submit, Pause, Resume, Cancel, Rollback, Switch): that
//     request's caller, from the context (the server's WithUserID).
// A cancel, manual rollback or switch is carried out by later steps that do not know who asked
// for it (the deployment stores the request, not its caller): their lines carry the requester,
// and the caller is on the server's line that accepted the request, in the events and in the
// audit log. cluster is "" on a line about the deployment as a whole.

// logContext is ctx whose log lines are d's: each carries the design's log fields (deploymentId,
// operatorName, version, cluster, userId, traceId). Outside a span, the lines take the trace of
// the request that created d (its stored trace context), so every line of it is found by trace.
func logContext(ctx context.Context, d *store.Deployment) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = telemetry.WithTraceContext(ctx, d.TraceContext)
	}
	return telemetry.WithDeployment(ctx, telemetry.Deployment{ID: d.ID, Operator: d.OperatorName, Version: d.Version, UserID: d.RequestedBy})
}

// idLogContext is ctx whose log lines are those of deployment id, for a line that has the id
// only (the approval-expiry loop, a failed event write): ctx itself when its lines are already
// that deployment's, or else with the deployment read from the store. When that read fails the
// line still has all the fields, with only deploymentId known.
func (e *Engine) idLogContext(ctx context.Context, id string) context.Context {
	if d, ok := telemetry.DeploymentOf(ctx); ok && d.ID == id {
		return ctx
	}
	if d, err := e.cfg.Store.DeploymentGetByID(context.WithoutCancel(ctx), id); err == nil {
		return logContext(ctx, d)
	}
	return telemetry.WithDeployment(ctx, telemetry.Deployment{ID: id})
}

// askedBy is ctx whose deployment log lines name user as userId: the user who asked for the step
// (an approver, the user who paused). An empty user leaves ctx as it is.
func askedBy(ctx context.Context, user string) context.Context {
	if user == "" {
		return ctx
	}
	return telemetry.WithUserID(ctx, user)
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
