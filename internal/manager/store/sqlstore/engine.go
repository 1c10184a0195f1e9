package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// DeploymentClaim claims up to p.Limit due deployments that no live claim holds, in one
// statement (on PostgreSQL rows locked by another transaction are skipped, FOR UPDATE SKIP
// LOCKED; on SQLite the one write connection serializes claimers), then reads their clusters,
// all in one transaction. They come back earliest NextRunAt first (then by id). A claim is the
// engine's bookkeeping: it changes neither Revision nor UpdatedAt.
func (e *executor) DeploymentClaim(ctx context.Context, p *store.DeploymentClaimParams) ([]*store.Deployment, error) {
	switch {
	case p.Owner == "":
		return nil, errors.New("claim deployments: empty owner")
	case p.Lease <= 0:
		return nil, fmt.Errorf("claim deployments: lease %s, want a positive duration", p.Lease)
	case p.Limit <= 0:
		return []*store.Deployment{}, nil
	}
	now := normTime(p.Now)
	until := normTime(now.Add(p.Lease))
	var out []*store.Deployment
	err := e.atomic(ctx, func(ex *executor) error {
		ds, err := queryList(ctx, ex, ex.q("DeploymentClaim"), []any{p.Owner, ex.d.TimeArg(now),
			ex.d.TimeArg(until), p.Limit}, "claim deployments", scanDeployment)
		if err != nil {
			return err
		}
		slices.SortFunc(ds, func(a, b *store.Deployment) int {
			return cmp.Or(a.NextRunAt.Compare(*b.NextRunAt), cmp.Compare(a.ID, b.ID))
		})
		out = ds
		return ex.withClusters(ctx, ds)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeploymentRenew moves owner's claim on the deployment to end at until. ErrConflict when owner
// does not hold it (another replica took it over, or it was released); ErrNotFound when the
// deployment does not exist.
func (e *executor) DeploymentRenew(ctx context.Context, id, owner string, until time.Time) error {
	nid, ok := normalizeID(id)
	if !ok {
		return fmt.Errorf("deployment %q: %w", id, store.ErrNotFound)
	}
	if owner == "" {
		return fmt.Errorf("renew the claim on deployment %s: empty owner", nid)
	}
	var got string
	err := e.w.QueryRowContext(ctx, e.q("DeploymentRenew"), nid, owner, e.ts(until)).Scan(&got)
	if err == nil {
		return nil
	}
	if err = e.mapErr(err); !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("renew the claim on deployment %s: %w", nid, err)
	}
	d, err := e.deploymentGet(ctx, nid)
	if err != nil {
		return err
	}
	holder := d.ClaimedBy
	if holder == "" {
		holder = "nobody"
	}
	return fmt.Errorf("deployment %s: %s no longer holds its claim (%s does): %w", nid, owner, holder, store.ErrConflict)
}

// runningStatuses are the deployments that count against the concurrency limit (DeploymentAdmit;
// the DeploymentCountRunning query lists them too).
var runningStatuses = []store.DeploymentStatus{
	store.DeploymentPlanning, store.DeploymentDeploying, store.DeploymentValidating, store.DeploymentRollingBack,
}

// DeploymentAdmit moves the oldest Queued deployments (by creation, then id) to Planning, due at
// p.Now (Revision+1, UpdatedAt p.Now), while fewer than p.Limit are running, skipping the
// operators with a deployment RollingBack. One transaction: on PostgreSQL under a transaction
// advisory lock, so admissions serialize across replicas and each counts what the previous one
// admitted; on SQLite the one write connection serializes them. A limit of 0 or less admits none.
func (e *executor) DeploymentAdmit(ctx context.Context, p *store.DeploymentAdmitParams) (*store.DeploymentAdmitResult, error) {
	now := normTime(p.Now)
	res := &store.DeploymentAdmitResult{Admitted: []string{}}
	err := e.atomic(ctx, func(ex *executor) error {
		if _, err := ex.w.ExecContext(ctx, ex.q("DeploymentAdmitLock")); err != nil {
			return fmt.Errorf("admit deployments: lock: %w", ex.mapErr(err))
		}
		running, err := ex.count(ctx, "DeploymentCountRunning", "admit deployments: count running")
		if err != nil {
			return err
		}
		if free := p.Limit - running; free > 0 {
			type admitted struct {
				id      string
				created time.Time
			}
			rows, err := queryList(ctx, ex, ex.q("DeploymentAdmit"), []any{ex.d.TimeArg(now), free},
				"admit deployments", func(row scanner) (admitted, error) {
					var a admitted
					return a, row.Scan(&a.id, timeDest{&a.created})
				})
			if err != nil {
				return err
			}
			slices.SortFunc(rows, func(a, b admitted) int {
				return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.id, b.id))
			})
			for _, r := range rows {
				res.Admitted = append(res.Admitted, r.id)
			}
		}
		res.Running = running + len(res.Admitted)
		res.Queued, err = ex.count(ctx, "DeploymentCountQueued", "admit deployments: count queued")
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Columns: operator_id, operator_name, cluster_name, environment, deployment_id,
// deployment_status, version, namespace, release, helm_revision.
func scanLiveRelease(row scanner) (*store.LiveRelease, error) {
	var r store.LiveRelease
	err := row.Scan(&r.OperatorID, &r.OperatorName, &r.ClusterName, &r.Environment, &r.DeploymentID,
		&r.DeploymentStatus, &r.Version, &r.Namespace, &r.Release, &r.HelmRevision,
		nullTimeDest{&r.DeploymentFinishedAt}, millisDest{&r.BakeWindow}, &r.Superseded)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// LiveReleaseList returns, per (operator, cluster), the healthy cluster row of the newest
// deployment (by creation, then id) that has one, by operator name then cluster: a deployment
// rolled back or failed there does not hide the one before it.
func (e *executor) LiveReleaseList(ctx context.Context, p *store.LiveReleaseListParams) ([]*store.LiveRelease, error) {
	l := newListQuery()
	if p.OperatorName != "" {
		l.where("o.name = ?", p.OperatorName)
	}
	if p.ClusterName != "" {
		l.where("c.cluster_name = ?", p.ClusterName)
	}
	q, args := l.buildAll(e.q("LiveReleaseList"))
	return queryList(ctx, e, q, args, "list live releases", scanLiveRelease)
}
