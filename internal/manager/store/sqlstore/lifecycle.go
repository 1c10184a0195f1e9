package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames,
		"OperatorUpdate", "OperatorMarkDeleted", "OperatorVersionSetRemoved",
		"OperatorRefreshGet", "OperatorRefreshRecord", "OperatorRefreshDue")
}

var _ store.OperatorLifecycleExecutor = (*executor)(nil)

// Columns: operator_id, source, etag, last_modified, checked_at, succeeded_at, next_at, error,
// failures.
func scanOperatorRefresh(row scanner) (*store.OperatorRefresh, error) {
	var r store.OperatorRefresh
	err := row.Scan(&r.OperatorID, &r.Source, &r.ETag, &r.LastModified, timeDest{&r.CheckedAt},
		nullTimeDest{&r.SucceededAt}, timeDest{&r.NextAt}, &r.Error, &r.Failures)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

func (e *executor) OperatorUpdate(ctx context.Context, p *store.OperatorUpdateParams) (*store.Operator, error) {
	id, ok := normalizeID(p.ID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", p.ID, store.ErrNotFound)
	}
	o, err := scanOperator(e.w.QueryRowContext(ctx, e.q("OperatorUpdate"),
		id, p.ChartRepository, p.ChartName, p.VersionFilter, e.ts(p.Now)))
	if err != nil {
		return nil, fmt.Errorf("update operator %s: %w", id, e.mapErr(err))
	}
	return o, nil
}

func (e *executor) OperatorMarkDeleted(ctx context.Context, p *store.OperatorMarkDeletedParams) (*store.Operator, error) {
	id, ok := normalizeID(p.ID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", p.ID, store.ErrNotFound)
	}
	o, err := scanOperator(e.w.QueryRowContext(ctx, e.q("OperatorMarkDeleted"), id, e.ts(p.Now)))
	if err != nil {
		return nil, fmt.Errorf("delete operator %s: %w", id, e.mapErr(err))
	}
	return o, nil
}

func (e *executor) OperatorVersionSetRemoved(ctx context.Context, p *store.OperatorVersionSetRemovedParams) (*store.OperatorVersion, error) {
	id, ok := normalizeID(p.OperatorID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
	}
	v, err := scanOperatorVersion(e.w.QueryRowContext(ctx, e.q("OperatorVersionSetRemoved"),
		id, p.Version, e.tsPtr(p.RemovedAt), p.Reason))
	if err != nil {
		return nil, fmt.Errorf("mark version %s of operator %s: %w", p.Version, id, e.mapErr(err))
	}
	return v, nil
}

func (e *executor) OperatorRefreshGet(ctx context.Context, operatorID string) (*store.OperatorRefresh, error) {
	id, ok := normalizeID(operatorID)
	if !ok {
		return nil, fmt.Errorf("refresh of operator id %q: %w", operatorID, store.ErrNotFound)
	}
	r, err := scanOperatorRefresh(e.r.QueryRowContext(ctx, e.q("OperatorRefreshGet"), id))
	if err != nil {
		return nil, fmt.Errorf("refresh of operator %s: %w", id, e.mapErr(err))
	}
	return r, nil
}

func (e *executor) OperatorRefreshRecord(ctx context.Context, p *store.OperatorRefreshRecordParams) (*store.OperatorRefresh, error) {
	id, ok := normalizeID(p.OperatorID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
	}
	r, err := scanOperatorRefresh(e.w.QueryRowContext(ctx, e.q("OperatorRefreshRecord"),
		id, p.Source, p.ETag, p.LastModified, e.ts(p.CheckedAt), p.Succeeded, e.ts(p.NextAt), p.Error))
	if err != nil {
		if err = e.mapErr(err); errors.Is(err, ErrForeignKey) {
			return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
		}
		return nil, fmt.Errorf("record refresh of operator %s: %w", id, err)
	}
	return r, nil
}

func (e *executor) OperatorRefreshDue(ctx context.Context, p *store.OperatorRefreshDueParams) ([]*store.Operator, error) {
	return queryList(ctx, e, e.q("OperatorRefreshDue"), []any{e.ts(p.Now), store.NormalizeLimit(p.Limit)},
		"list operators due for a refresh", scanOperator)
}
