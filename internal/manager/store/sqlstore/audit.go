package sqlstore

import (
	"context"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Columns: id, at, actor, action, target_kind, target_name, result, request_id, details.
func scanAuditEvent(row scanner) (*store.AuditEvent, error) {
	var a store.AuditEvent
	err := row.Scan(&a.ID, timeDest{&a.At}, &a.Actor, &a.Action, &a.TargetKind, &a.TargetName,
		&a.Result, &a.RequestID, &a.Details)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

func (e *executor) AuditInsert(ctx context.Context, p *store.AuditInsertParams) (*store.AuditEvent, error) {
	details := p.Details
	if details == "" {
		details = "{}"
	}
	a, err := scanAuditEvent(e.w.QueryRowContext(ctx, e.q("AuditInsert"),
		e.ts(p.At), p.Actor, p.Action, p.TargetKind, p.TargetName, p.Result, p.RequestID, details))
	if err != nil {
		return nil, fmt.Errorf("record audit event %s: %w", p.Action, e.mapErr(err))
	}
	return a, nil
}

// AuditList returns events newest first (by id, which follows insertion).
func (e *executor) AuditList(ctx context.Context, p *store.AuditListParams) ([]*store.AuditEvent, error) {
	l := newListQuery()
	for _, f := range []struct{ col, v string }{
		{"actor", p.Actor}, {"action", p.Action}, {"target_kind", p.TargetKind}, {"target_name", p.TargetName},
	} {
		if f.v != "" {
			l.where(f.col+" = ?", f.v)
		}
	}
	if p.Since != nil {
		l.where("at >= ?", e.tsPtr(p.Since))
	}
	if p.BeforeID > 0 {
		l.where("id < ?", p.BeforeID)
	}
	q, args := l.build(e.q("AuditList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, "list audit events", scanAuditEvent)
}
