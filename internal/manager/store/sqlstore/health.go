package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// healthValues are what operator_health.health allows.
var healthValues = []string{"Healthy", "Degraded", "Unhealthy"}

// Columns: operator_name, cluster_name, deployment_id, health, result, consecutive_failures,
// checked_at.
func scanOperatorHealth(row scanner) (*store.OperatorHealth, error) {
	var h store.OperatorHealth
	err := row.Scan(&h.OperatorName, &h.ClusterName, &h.DeploymentID, &h.Health, rawJSON{&h.Result},
		&h.ConsecutiveFailures, timeDest{&h.CheckedAt})
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// OperatorHealthRecord upserts the latest health of an operator on a cluster in one statement,
// which computes ConsecutiveFailures from the stored row: +1 on Unhealthy, 0 on Healthy,
// unchanged on Degraded; a record for another deployment starts over (1 when Unhealthy, else 0).
// A zero CheckedAt is now. An unknown deployment is ErrNotFound.
func (e *executor) OperatorHealthRecord(ctx context.Context, p *store.OperatorHealthRecordParams) (*store.OperatorHealth, error) {
	what := fmt.Sprintf("record the health of operator %s on cluster %s", p.OperatorName, p.ClusterName)
	switch {
	case p.OperatorName == "" || p.ClusterName == "":
		return nil, fmt.Errorf("%s: empty operator or cluster name", what)
	case !slices.Contains(healthValues, p.Health):
		return nil, fmt.Errorf("%s: health %q is not one of %v", what, p.Health, healthValues)
	}
	if err := checkJSON("result", p.Result); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	depID, ok := normalizeID(p.DeploymentID)
	if !ok {
		return nil, fmt.Errorf("deployment %q: %w", p.DeploymentID, store.ErrNotFound)
	}
	h, err := scanOperatorHealth(e.w.QueryRowContext(ctx, e.q("OperatorHealthRecord"), p.OperatorName,
		p.ClusterName, depID, p.Health, jsonArg(p.Result), e.ts(p.CheckedAt)))
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, ErrForeignKey) {
			return nil, fmt.Errorf("deployment %s: %w", depID, store.ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return h, nil
}

// OperatorHealthList returns the stored health records, by operator then cluster, of one
// operator (p.OperatorName) and one cluster (p.ClusterName) when set.
func (e *executor) OperatorHealthList(ctx context.Context, p *store.OperatorHealthListParams) ([]*store.OperatorHealth, error) {
	l := newListQuery()
	if p.OperatorName != "" {
		l.where("operator_name = ?", p.OperatorName)
	}
	if p.ClusterName != "" {
		l.where("cluster_name = ?", p.ClusterName)
	}
	q, args := l.buildAll(e.q("OperatorHealthList"))
	return queryList(ctx, e, q, args, "list operator health", scanOperatorHealth)
}

// OperatorHealthDelete forgets an operator's health on a cluster; forgetting what is not stored
// is not an error.
func (e *executor) OperatorHealthDelete(ctx context.Context, operatorName, clusterName string) error {
	if _, err := e.w.ExecContext(ctx, e.q("OperatorHealthDelete"), operatorName, clusterName); err != nil {
		return fmt.Errorf("forget the health of operator %s on cluster %s: %w", operatorName, clusterName, e.mapErr(err))
	}
	return nil
}
