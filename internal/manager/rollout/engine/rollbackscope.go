package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// RollbackScope decides what FailureThreshold Unhealthy checks of a live release do at now: roll
// its deployment back until the returned time (why is ""), or alert only (why says why). A
// deployment rolls back on its own while it runs (its steps judge it; the health loop leaves
// active deployments alone) and within its bake window after it completed, never later, and never
// once a newer deployment installed on the cluster and was rolled back or failed there: the live
// release is then what that one restored, and rolling it back would go past the version the newer
// one replaced. Otherwise an Unhealthy operator is an alert (operator.unhealthy, the Fleet).
func RollbackScope(r *store.LiveRelease, now time.Time) (until time.Time, why string) {
	switch {
	case r.Superseded:
		return time.Time{}, fmt.Sprintf("it is what a newer deployment restored on %s, and a rollback never goes past the version that deployment replaced", r.ClusterName)
	case r.DeploymentStatus != store.DeploymentCompleted:
		return time.Time{}, fmt.Sprintf("its deployment %s is %s: only a running deployment, or a completed one within its bake window, rolls back by itself", r.DeploymentID, r.DeploymentStatus)
	case r.DeploymentFinishedAt == nil:
		return time.Time{}, "its deployment has no completion time"
	}
	until = r.DeploymentFinishedAt.Add(r.BakeWindow)
	switch {
	case r.BakeWindow <= 0:
		return time.Time{}, "its deployment has no bake window (bakeWindow PT0S)"
	case !now.Before(until):
		return time.Time{}, fmt.Sprintf("past its bake window (%s after it completed at %s)", r.BakeWindow, r.DeploymentFinishedAt.UTC().Format(time.RFC3339))
	}
	return until, ""
}

// sameFailure names the signals (the parts of a health check: pods, webhooks, crds) that are
// Unhealthy both in restored, the check of the release a rollback restored on cluster, and in the
// last check of d's own release there, the one that failed it. None when d's last check there was
// not Unhealthy (a manual rollback, a failed install) or is not stored: then an Unhealthy restored
// release is a failed rollback, not a baseline that was unhealthy already.
func (e *Engine) sameFailure(ctx context.Context, d *store.Deployment, cluster string, restored health.Result) []string {
	recs, err := e.cfg.Store.OperatorHealthList(ctx, &store.OperatorHealthListParams{OperatorName: d.OperatorName, ClusterName: cluster})
	if err != nil {
		e.logErr(clusterContext(ctx, cluster), "reading the check that failed "+d.ID, err)
		return nil
	}
	var failed api.OperatorHealthCheck
	if len(recs) != 1 || recs[0].DeploymentID != d.ID || recs[0].Health != string(api.Unhealthy) ||
		json.Unmarshal(recs[0].Result, &failed) != nil {
		return nil
	}
	var same []string
	before := health.UnhealthyParts(failed)
	for _, part := range health.UnhealthyParts(restored.OperatorHealthCheck) {
		for _, b := range before {
			if part == b {
				same = append(same, part)
			}
		}
	}
	return same
}
