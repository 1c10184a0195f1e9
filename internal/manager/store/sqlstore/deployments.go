package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

var (
	strategies = []string{"Canary", "BlueGreen", "Rolling", "Direct"}

	clusterStatuses = []store.ClusterStatus{
		store.ClusterPending, store.ClusterInstalling, store.ClusterValidating, store.ClusterHealthy,
		store.ClusterRolledBack, store.ClusterFailed, store.ClusterSkipped,
	}
)

// activeCondition selects the deployments that are not terminal (store.DeploymentStatus.Terminal;
// the conformance suite checks both agree).
const activeCondition = "d.status NOT IN ('Completed', 'RolledBack', 'Failed', 'Cancelled')"

// Columns: id, operator_id, operator_name, version, strategy, config, helm_values,
// values_by_environment, status, reason, requested_by, request_id, revision, created_at,
// updated_at, started_at, finished_at, stage, stage_started_at, next_run_at, claimed_by,
// lease_until, cancel_requested, rollback_requested, switch_requested, rollback_reason,
// rollback_started_at, rollback_finished_at, switched_at, blue_delete_at, blue_deleted,
// trace_context, paused_at, paused_by, pause_reason, bake_window_ms, analyses.
func deploymentDest(d *store.Deployment) []any {
	return []any{&d.ID, &d.OperatorID, &d.OperatorName, &d.Version, &d.Strategy,
		rawJSON{&d.Config}, rawJSON{&d.Values}, rawJSON{&d.ValuesByEnvironment}, &d.Status,
		&d.Reason, &d.RequestedBy, &d.RequestID, &d.Revision, timeDest{&d.CreatedAt},
		timeDest{&d.UpdatedAt}, nullTimeDest{&d.StartedAt}, nullTimeDest{&d.FinishedAt},
		&d.Stage, nullTimeDest{&d.StageStartedAt}, nullTimeDest{&d.NextRunAt}, &d.ClaimedBy,
		nullTimeDest{&d.LeaseUntil}, &d.CancelRequested, &d.RollbackRequested, &d.SwitchRequested,
		&d.RollbackReason, nullTimeDest{&d.RollbackStartedAt}, nullTimeDest{&d.RollbackFinishedAt},
		nullTimeDest{&d.SwitchedAt}, nullTimeDest{&d.BlueDeleteAt}, &d.BlueDeleted,
		nullString{&d.TraceContext}, nullTimeDest{&d.PausedAt}, &d.PausedBy, &d.PauseReason,
		millisDest{&d.BakeWindow}, rawJSON{&d.Analyses}}
}

// deploymentArgs are the engine's columns of d as query arguments, in deploymentDest's order
// (stage … bake_window_ms): what DeploymentInsert and DeploymentUpdate write after the rest.
func (e *executor) deploymentArgs(d *store.Deployment) []any {
	return []any{d.Stage, e.tsPtr(d.StageStartedAt), e.tsPtr(d.NextRunAt), d.ClaimedBy,
		e.tsPtr(d.LeaseUntil), d.CancelRequested, d.RollbackRequested, d.SwitchRequested,
		d.RollbackReason, e.tsPtr(d.RollbackStartedAt), e.tsPtr(d.RollbackFinishedAt),
		e.tsPtr(d.SwitchedAt), e.tsPtr(d.BlueDeleteAt), d.BlueDeleted, nullIfEmpty(d.TraceContext),
		e.tsPtr(d.PausedAt), d.PausedBy, d.PauseReason, d.BakeWindow.Milliseconds()}
}

func scanDeployment(row scanner) (*store.Deployment, error) {
	d := &store.Deployment{Clusters: []*store.DeploymentCluster{}}
	if err := row.Scan(deploymentDest(d)...); err != nil {
		return nil, err
	}
	return d, nil
}

// Columns: deployment_id, cluster_name, environment, stage, status, helm_revision,
// previous_revision, previous_version, message, active, updated_at, namespace, release,
// blue_namespace, blue_release, install_attempts.
func scanDeploymentCluster(row scanner) (*store.DeploymentCluster, error) {
	var c store.DeploymentCluster
	err := row.Scan(&c.DeploymentID, &c.ClusterName, &c.Environment, &c.Stage, &c.Status,
		&c.HelmRevision, &c.PreviousRevision, &c.PreviousVersion, &c.Message, &c.Active,
		timeDest{&c.UpdatedAt}, &c.Namespace, &c.Release, &c.BlueNamespace, &c.BlueRelease,
		&c.InstallAttempts)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// clusterArgs are c's columns from namespace on (namespace, release, blue_namespace,
// blue_release, install_attempts), as DeploymentClusterInsert and DeploymentClusterUpdate end.
func clusterArgs(c *store.DeploymentCluster) []any {
	return []any{c.Namespace, c.Release, c.BlueNamespace, c.BlueRelease, c.InstallAttempts}
}

// deploymentGet runs DeploymentGet: the deployment's columns then its cluster's on each row, NULL
// cluster columns when it has none.
func (e *executor) deploymentGet(ctx context.Context, id string) (*store.Deployment, error) {
	rows, err := e.r.QueryContext(ctx, e.q("DeploymentGet"), id)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: %w", id, e.mapErr(err))
	}
	defer func() { _ = rows.Close() }()
	var d *store.Deployment
	for rows.Next() {
		var row store.Deployment
		var depID, name, env, status, prevVersion, msg, ns, rel, blueNS, blueRel sql.NullString
		var stage, helmRev, prevRev, attempts sql.NullInt64
		var active sql.NullBool
		var updated *time.Time
		dest := append(deploymentDest(&row), &depID, &name, &env, &stage, &status, &helmRev,
			&prevRev, &prevVersion, &msg, &active, nullTimeDest{&updated}, &ns, &rel, &blueNS,
			&blueRel, &attempts)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("deployment %s: %w", id, err)
		}
		if d == nil {
			d = &row
			d.Clusters = []*store.DeploymentCluster{}
		}
		if !depID.Valid || updated == nil {
			continue
		}
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{
			DeploymentID: depID.String, ClusterName: name.String, Environment: store.Environment(env.String),
			Stage: int(stage.Int64), Status: store.ClusterStatus(status.String), HelmRevision: int(helmRev.Int64),
			PreviousRevision: int(prevRev.Int64), PreviousVersion: prevVersion.String, Message: msg.String,
			Active: active.Bool, UpdatedAt: *updated, Namespace: ns.String, Release: rel.String,
			BlueNamespace: blueNS.String, BlueRelease: blueRel.String, InstallAttempts: int(attempts.Int64),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deployment %s: %w", id, e.mapErr(err))
	}
	if d == nil {
		return nil, fmt.Errorf("deployment %s: %w", id, store.ErrNotFound)
	}
	return d, nil
}

// checkDeployment validates what the schema's CHECKs would refuse, with a clearer message.
func checkDeployment(d *store.Deployment) error {
	if d.Version == "" {
		return errors.New("empty version")
	}
	if !slices.Contains(strategies, d.Strategy) {
		return fmt.Errorf("strategy %q is not one of %v", d.Strategy, strategies)
	}
	if !slices.Contains(store.DeploymentStatuses, d.Status) {
		return fmt.Errorf("status %q is not one of %v", d.Status, store.DeploymentStatuses)
	}
	for _, j := range []struct {
		field string
		v     []byte
	}{{"config", d.Config}, {"values", d.Values}, {"valuesByEnvironment", d.ValuesByEnvironment}, {"analyses", d.Analyses}} {
		if err := checkJSON(j.field, j.v); err != nil {
			return err
		}
	}
	for _, c := range d.Clusters {
		if c == nil || c.ClusterName == "" {
			return errors.New("a cluster without a name")
		}
		if !c.Environment.Valid() {
			return fmt.Errorf("cluster %q: environment %q is not one of %v", c.ClusterName, c.Environment, store.Environments)
		}
		if !slices.Contains(clusterStatuses, c.Status) {
			return fmt.Errorf("cluster %q: status %q is not one of %v", c.ClusterName, c.Status, clusterStatuses)
		}
	}
	return nil
}

// DeploymentCreate inserts d and its clusters in one transaction (a savepoint of the caller's
// on a Tx). An empty ID gets a new UUID, an empty Status is Planning, an empty cluster status
// pending; OperatorName is the operator's; Revision starts at 0; zero times are now; every
// cluster is Active unless the deployment is created terminal; the engine's fields (Stage,
// NextRunAt, a claim, the requests, the rollback and BlueGreen times) and the clusters' releases
// and InstallAttempts are stored as given. An unknown operator is
// ErrNotFound, a taken id ErrAlreadyExists, and a cluster already in another active deployment
// of the operator ErrConflict.
func (e *executor) DeploymentCreate(ctx context.Context, d *store.Deployment) (*store.Deployment, error) {
	in := cloneDeployment(d)
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	id, ok := normalizeID(in.ID)
	if !ok {
		return nil, fmt.Errorf("create deployment: id %q is not a UUID", d.ID)
	}
	opID, ok := normalizeID(in.OperatorID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", d.OperatorID, store.ErrNotFound)
	}
	if in.Status == "" {
		in.Status = store.DeploymentPlanning
	}
	seen := map[string]bool{}
	for _, c := range in.Clusters {
		if c == nil {
			continue
		}
		if c.Status == "" {
			c.Status = store.ClusterPending
		}
		if seen[c.ClusterName] {
			return nil, fmt.Errorf("create deployment %s: cluster %q twice", id, c.ClusterName)
		}
		seen[c.ClusterName] = true
	}
	if err := checkDeployment(in); err != nil {
		return nil, fmt.Errorf("create deployment %s: %w", id, err)
	}
	created := normTime(in.CreatedAt)
	var out *store.Deployment
	err := e.atomic(ctx, func(ex *executor) error {
		op, err := ex.OperatorGetByID(ctx, opID)
		if err != nil {
			return err
		}
		args := append([]any{id, opID, op.Name, in.Version, in.Strategy, jsonArg(in.Config),
			jsonArg(in.Values), jsonArg(in.ValuesByEnvironment), string(in.Status), in.Reason,
			in.RequestedBy, in.RequestID, ex.d.TimeArg(created), ex.tsPtr(in.StartedAt),
			ex.tsPtr(in.FinishedAt)}, ex.deploymentArgs(in)...)
		args = append(args, jsonArg(in.Analyses)) // written once: the analyses a deployment was created with
		_, err = ex.w.ExecContext(ctx, ex.q("DeploymentInsert"), args...)
		if err != nil {
			return fmt.Errorf("create deployment %s: %w", id, ex.mapErr(err))
		}
		active := !in.Status.Terminal()
		for i, c := range in.Clusters {
			updated := created
			if !c.UpdatedAt.IsZero() {
				updated = normTime(c.UpdatedAt)
			}
			args := append([]any{id, c.ClusterName, opID, i, string(c.Environment), c.Stage,
				string(c.Status), c.HelmRevision, c.PreviousRevision, c.PreviousVersion, c.Message,
				active, ex.d.TimeArg(updated)}, clusterArgs(c)...)
			_, err := ex.w.ExecContext(ctx, ex.q("DeploymentClusterInsert"), args...)
			if err != nil {
				return ex.clusterWriteErr(id, op.Name, c.ClusterName, err)
			}
		}
		out, err = ex.deploymentGet(ctx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// clusterWriteErr maps a failed write of a deployment's cluster row: a unique violation there
// can only be the one-active-deployment index (the cluster names of one deployment are checked
// distinct before), so it is ErrConflict.
func (e *executor) clusterWriteErr(id, operator, cluster string, err error) error {
	err = e.mapErr(err)
	if errors.Is(err, store.ErrAlreadyExists) {
		return fmt.Errorf("deployment %s: operator %s already has an active deployment to cluster %q: %w",
			id, operator, cluster, store.ErrConflict)
	}
	return fmt.Errorf("deployment %s, cluster %q: %w", id, cluster, err)
}

func (e *executor) DeploymentGetByID(ctx context.Context, id string) (*store.Deployment, error) {
	nid, ok := normalizeID(id)
	if !ok {
		return nil, fmt.Errorf("deployment %q: %w", id, store.ErrNotFound)
	}
	return e.deploymentGet(ctx, nid)
}

// DeploymentList returns a page of deployments, newest first, each with its clusters.
func (e *executor) DeploymentList(ctx context.Context, p *store.DeploymentListParams) ([]*store.Deployment, error) {
	l := newListQuery()
	if p.OperatorID != "" {
		id, ok := normalizeID(p.OperatorID)
		if !ok {
			return []*store.Deployment{}, nil
		}
		l.where("d.operator_id = ?", id)
	}
	if p.Status != "" {
		l.where("d.status = ?", string(p.Status))
	}
	if p.Active {
		l.conds = append(l.conds, activeCondition)
	}
	if p.Before != "" {
		id, ok := normalizeID(p.Before)
		if !ok {
			return []*store.Deployment{}, nil
		}
		l.where("(d.created_at, d.id) < (SELECT created_at, id FROM deployments WHERE id = ?)", id)
	}
	q, args := l.build(e.q("DeploymentList"), store.NormalizeLimit(p.Limit))
	ds, err := queryList(ctx, e, q, args, "list deployments", scanDeployment)
	if err != nil {
		return nil, err
	}
	if err := e.withClusters(ctx, ds); err != nil {
		return nil, err
	}
	return ds, nil
}

// withClusters fills the clusters of ds (in the order created) in one query.
func (e *executor) withClusters(ctx context.Context, ds []*store.Deployment) error {
	return attach(ctx, e, ds, func(d *store.Deployment) string { return d.ID }, "DeploymentClusterListMany",
		"list deployments' clusters", scanDeploymentCluster,
		func(c *store.DeploymentCluster) string { return c.DeploymentID },
		func(d *store.Deployment, c *store.DeploymentCluster) { d.Clusters = append(d.Clusters, c) })
}

// DeploymentUpdate locks the deployment (FOR NO KEY UPDATE on PostgreSQL; SQLite's one write
// connection), then reads it with its clusters, in one transaction (a savepoint of the caller's on
// a Tx), calls fn on a copy, and writes back the deployment and every cluster fn changed, with
// Revision+1; fn's error aborts and is returned as is. fn may change anything but ID,
// OperatorID, OperatorName, CreatedAt, Revision and the clusters' names and order (an error).
// UpdatedAt becomes now unless fn set it, and so does a changed cluster's; a deployment becoming
// terminal gets FinishedAt (UpdatedAt, unless fn set it), and a terminal deployment is not paused
// and its clusters are all inactive. A cluster made active again while the operator has another active deployment
// to it is ErrConflict.
func (e *executor) DeploymentUpdate(ctx context.Context, id string, fn func(d *store.Deployment) error) (*store.Deployment, error) {
	nid, ok := normalizeID(id)
	if !ok {
		return nil, fmt.Errorf("deployment %q: %w", id, store.ErrNotFound)
	}
	var out *store.Deployment
	var fnErr error
	err := e.atomic(ctx, func(ex *executor) error {
		var locked string
		if err := ex.w.QueryRowContext(ctx, ex.q("DeploymentLock"), nid).Scan(&locked); err != nil {
			return fmt.Errorf("deployment %s: %w", nid, ex.mapErr(err))
		}
		cur, err := ex.deploymentGet(ctx, nid)
		if err != nil {
			return err
		}
		next := cloneDeployment(cur)
		if err := fn(next); err != nil {
			fnErr = err
			return err
		}
		if err := checkUpdate(cur, next); err != nil {
			return fmt.Errorf("update deployment %s: %w", nid, err)
		}
		if next.UpdatedAt.Equal(cur.UpdatedAt) {
			next.UpdatedAt = time.Now()
		}
		next.UpdatedAt = normTime(next.UpdatedAt)
		terminal := next.Status.Terminal()
		if terminal && !cur.Status.Terminal() && next.FinishedAt == nil {
			next.FinishedAt = &next.UpdatedAt
		}
		if terminal {
			next.PausedAt, next.PausedBy, next.PauseReason = nil, "", "" // a finished deployment is not paused
		}
		args := append([]any{nid, cur.Revision, next.Version, next.Strategy, jsonArg(next.Config),
			jsonArg(next.Values), jsonArg(next.ValuesByEnvironment), string(next.Status), next.Reason,
			next.RequestedBy, next.RequestID, ex.d.TimeArg(next.UpdatedAt), ex.tsPtr(next.StartedAt),
			ex.tsPtr(next.FinishedAt)}, ex.deploymentArgs(next)...)
		res, err := ex.w.ExecContext(ctx, ex.q("DeploymentUpdate"), args...)
		if err != nil {
			return fmt.Errorf("update deployment %s: %w", nid, ex.mapErr(err))
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update deployment %s: %w", nid, err)
		} else if n != 1 {
			return fmt.Errorf("update deployment %s: revision %d moved on: %w", nid, cur.Revision, store.ErrConflict)
		}
		for i, c := range next.Clusters {
			if terminal {
				c.Active = false
			}
			old := cur.Clusters[i]
			if *c == *old {
				continue
			}
			if c.UpdatedAt.Equal(old.UpdatedAt) {
				c.UpdatedAt = next.UpdatedAt
			}
			args := append([]any{nid, c.ClusterName, string(c.Environment), c.Stage, string(c.Status),
				c.HelmRevision, c.PreviousRevision, c.PreviousVersion, c.Message, c.Active,
				ex.ts(c.UpdatedAt)}, clusterArgs(c)...)
			_, err := ex.w.ExecContext(ctx, ex.q("DeploymentClusterUpdate"), args...)
			if err != nil {
				return ex.clusterWriteErr(nid, cur.OperatorName, c.ClusterName, err)
			}
		}
		out, err = ex.deploymentGet(ctx, nid)
		return err
	})
	switch {
	case fnErr != nil:
		return nil, fnErr
	case err != nil:
		return nil, err
	}
	return out, nil
}

// checkUpdate refuses what fn may not change, and what the schema would refuse.
func checkUpdate(cur, next *store.Deployment) error {
	if next.ID != cur.ID || next.OperatorID != cur.OperatorID || next.OperatorName != cur.OperatorName ||
		!next.CreatedAt.Equal(cur.CreatedAt) || next.Revision != cur.Revision {
		return errors.New("ID, OperatorID, OperatorName, CreatedAt and Revision cannot change")
	}
	if len(next.Clusters) != len(cur.Clusters) {
		return fmt.Errorf("the clusters cannot change: %d, was %d", len(next.Clusters), len(cur.Clusters))
	}
	for i, c := range next.Clusters {
		if c == nil || c.ClusterName != cur.Clusters[i].ClusterName || c.DeploymentID != cur.ID {
			return fmt.Errorf("the clusters cannot change (cluster %d was %q)", i, cur.Clusters[i].ClusterName)
		}
	}
	return checkDeployment(next)
}

// cloneDeployment copies d deeply enough that changing the copy (its clusters, its JSON, its
// times) leaves d as it was.
func cloneDeployment(d *store.Deployment) *store.Deployment {
	c := *d
	c.Config, c.Values, c.ValuesByEnvironment = slices.Clone(d.Config), slices.Clone(d.Values), slices.Clone(d.ValuesByEnvironment)
	c.Analyses = slices.Clone(d.Analyses)
	for _, t := range []**time.Time{&c.StartedAt, &c.FinishedAt, &c.StageStartedAt, &c.NextRunAt,
		&c.LeaseUntil, &c.RollbackStartedAt, &c.RollbackFinishedAt, &c.SwitchedAt, &c.BlueDeleteAt, &c.PausedAt} {
		if *t != nil {
			v := **t
			*t = &v
		}
	}
	c.Clusters = make([]*store.DeploymentCluster, len(d.Clusters))
	for i, dc := range d.Clusters {
		if dc != nil {
			cc := *dc
			c.Clusters[i] = &cc
		}
	}
	return &c
}

// DeploymentCountActive counts the deployments that are not terminal (Queued and
// WaitingApproval included; DeploymentCountByStatus tells them apart).
func (e *executor) DeploymentCountActive(ctx context.Context) (int, error) {
	return e.count(ctx, "DeploymentCountActive", "count active deployments")
}

// DeploymentCountByStatus counts deployments by status; a status without any has no entry.
func (e *executor) DeploymentCountByStatus(ctx context.Context) (map[store.DeploymentStatus]int, error) {
	rows, err := e.r.QueryContext(ctx, e.q("DeploymentCountByStatus"))
	if err != nil {
		return nil, fmt.Errorf("count deployments by status: %w", e.mapErr(err))
	}
	defer func() { _ = rows.Close() }()
	out := map[store.DeploymentStatus]int{}
	for rows.Next() {
		var s store.DeploymentStatus
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("count deployments by status: %w", err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count deployments by status: %w", e.mapErr(err))
	}
	return out, nil
}

// Columns: id, deployment_id, at, type, cluster, message, details.
func scanDeploymentEvent(row scanner) (*store.DeploymentEvent, error) {
	var ev store.DeploymentEvent
	err := row.Scan(&ev.ID, &ev.DeploymentID, timeDest{&ev.At}, &ev.Type, &ev.Cluster, &ev.Message, rawJSON{&ev.Details})
	if err != nil {
		return nil, err
	}
	return &ev, nil
}

// DeploymentEventInsert appends an event (At now when zero); ids increase, and on PostgreSQL the
// insert locks the deployment's row, so the events of one deployment commit in id order and a
// reader resuming after an id misses none. An unknown deployment is ErrNotFound.
func (e *executor) DeploymentEventInsert(ctx context.Context, ev *store.DeploymentEvent) (*store.DeploymentEvent, error) {
	id, ok := normalizeID(ev.DeploymentID)
	if !ok {
		return nil, fmt.Errorf("deployment %q: %w", ev.DeploymentID, store.ErrNotFound)
	}
	if ev.Type == "" {
		return nil, fmt.Errorf("record event of deployment %s: empty type", id)
	}
	if err := checkJSON("details", ev.Details); err != nil {
		return nil, fmt.Errorf("record event of deployment %s: %w", id, err)
	}
	out, err := scanDeploymentEvent(e.w.QueryRowContext(ctx, e.q("DeploymentEventInsert"),
		id, e.ts(ev.At), ev.Type, ev.Cluster, ev.Message, jsonArg(ev.Details)))
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("deployment %s: %w", id, err)
		}
		return nil, fmt.Errorf("record event %s of deployment %s: %w", ev.Type, id, err)
	}
	return out, nil
}

// DeploymentEventList returns a deployment's events after p.AfterID, oldest first.
func (e *executor) DeploymentEventList(ctx context.Context, p *store.DeploymentEventListParams) ([]*store.DeploymentEvent, error) {
	id, ok := normalizeID(p.DeploymentID)
	if !ok {
		return []*store.DeploymentEvent{}, nil
	}
	l := newListQuery(id)
	if p.AfterID > 0 {
		l.where("id > ?", p.AfterID)
	}
	q, args := l.build(e.q("DeploymentEventList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, fmt.Sprintf("list events of deployment %s", id), scanDeploymentEvent)
}
