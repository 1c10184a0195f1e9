package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames, "OperatorBaselinePut", "OperatorBaselinePrune", "OperatorBaselineGet", "OperatorBaselineList")
}

// Columns: operator_name, cluster_name, deployment_id, source, captured_at, data.
func scanOperatorBaseline(row scanner) (*store.OperatorBaseline, error) {
	var b store.OperatorBaseline
	if err := row.Scan(&b.OperatorName, &b.ClusterName, &b.DeploymentID, &b.Source, timeDest{&b.CapturedAt}, &b.Data); err != nil {
		return nil, err
	}
	return &b, nil
}

// OperatorBaselinePut upserts first and prunes after: a crash between the two leaves an older
// deployment's baseline behind, never none.
func (e *executor) OperatorBaselinePut(ctx context.Context, p *store.OperatorBaselinePutParams) (*store.OperatorBaseline, error) {
	switch {
	case strings.TrimSpace(p.OperatorName) == "" || strings.TrimSpace(p.ClusterName) == "":
		return nil, fmt.Errorf("store baseline: operator and cluster are required")
	case strings.TrimSpace(p.Source) == "":
		return nil, fmt.Errorf("store baseline of %s on %s: no source", p.OperatorName, p.ClusterName)
	case p.CapturedAt.IsZero():
		return nil, fmt.Errorf("store baseline of %s on %s: no capture time", p.OperatorName, p.ClusterName)
	case len(p.Data) == 0 || len(p.Data) > store.MaxBaselineBytes:
		return nil, fmt.Errorf("store baseline of %s on %s: %d bytes of data, want 1-%d", p.OperatorName, p.ClusterName, len(p.Data), store.MaxBaselineBytes)
	}
	b, err := scanOperatorBaseline(e.w.QueryRowContext(ctx, e.q("OperatorBaselinePut"),
		p.OperatorName, p.ClusterName, p.DeploymentID, p.Source, e.ts(p.CapturedAt), p.Data))
	if err != nil {
		return nil, fmt.Errorf("store baseline of %s on %s: %w", p.OperatorName, p.ClusterName, e.mapErr(err))
	}
	if p.DeploymentID != "" {
		if _, err := e.w.ExecContext(ctx, e.q("OperatorBaselinePrune"), p.OperatorName, p.ClusterName, p.DeploymentID); err != nil {
			return nil, fmt.Errorf("prune baselines of %s on %s: %w", p.OperatorName, p.ClusterName, e.mapErr(err))
		}
	}
	return b, nil
}

func (e *executor) OperatorBaselineGet(ctx context.Context, p *store.OperatorBaselineGetParams) (*store.OperatorBaseline, error) {
	b, err := scanOperatorBaseline(e.r.QueryRowContext(ctx, e.q("OperatorBaselineGet"), p.OperatorName, p.ClusterName, p.DeploymentID))
	if err != nil {
		what := "last Healthy baseline"
		if p.DeploymentID != "" {
			what = "baseline of deployment " + p.DeploymentID
		}
		return nil, fmt.Errorf("%s of %s on %s: %w", what, p.OperatorName, p.ClusterName, e.mapErr(err))
	}
	return b, nil
}

func (e *executor) OperatorBaselineList(ctx context.Context, p *store.OperatorBaselineListParams) ([]*store.OperatorBaseline, error) {
	rows, err := e.r.QueryContext(ctx, e.q("OperatorBaselineList"), p.OperatorName, p.ClusterName)
	if err != nil {
		return nil, fmt.Errorf("baselines of %s on %s: %w", p.OperatorName, p.ClusterName, e.mapErr(err))
	}
	defer func() { _ = rows.Close() }()
	out := []*store.OperatorBaseline{}
	for rows.Next() {
		b, err := scanOperatorBaseline(rows)
		if err != nil {
			return nil, fmt.Errorf("baselines of %s on %s: %w", p.OperatorName, p.ClusterName, e.mapErr(err))
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
