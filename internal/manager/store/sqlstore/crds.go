package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Columns: id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at,
// migration_note, migration_note_url.
func scanCRDSchema(row scanner) (*store.CRDSchema, error) {
	var s store.CRDSchema
	err := row.Scan(&s.ID, &s.Name, &s.Group, &s.Kind, &s.Scope, nullString{&s.OperatorID},
		&s.Version, &s.Digest, &s.Definition, timeDest{&s.CreatedAt}, &s.Note.Text, &s.Note.URL)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// Columns: the CRDSchema's, then the revision count.
func scanCRDSummary(row scanner) (*store.CRDSummary, error) {
	var s store.CRDSchema
	var sum store.CRDSummary
	err := row.Scan(&s.ID, &s.Name, &s.Group, &s.Kind, &s.Scope, nullString{&s.OperatorID},
		&s.Version, &s.Digest, &s.Definition, timeDest{&s.CreatedAt}, &s.Note.Text, &s.Note.URL, &sum.Revisions)
	if err != nil {
		return nil, err
	}
	sum.Name, sum.Group, sum.Kind, sum.Latest = s.Name, s.Group, s.Kind, &s
	return &sum, nil
}

// Columns: id, crd_name, from_digest, to_digest, to_version, approved_by, reason, request_id, created_at.
func scanCRDApproval(row scanner) (*store.CRDApproval, error) {
	var a store.CRDApproval
	err := row.Scan(&a.ID, &a.CRDName, &a.FromDigest, &a.ToDigest, &a.ToVersion, &a.ApprovedBy,
		&a.Reason, &a.RequestID, timeDest{&a.CreatedAt})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

func (e *executor) CRDSchemaInsert(ctx context.Context, p *store.CRDSchemaInsertParams) (*store.CRDSchema, error) {
	var opID any
	if p.OperatorID != "" {
		id, ok := normalizeID(p.OperatorID)
		if !ok {
			return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
		}
		opID = id
	}
	// In a savepoint: a revision already stored (the same CRD shipped by several chart versions,
	// the usual case) must leave the caller's transaction usable; PostgreSQL aborts a transaction
	// on a failed statement.
	var s *store.CRDSchema
	err := e.atomic(ctx, func(ex *executor) error {
		var err error
		s, err = scanCRDSchema(ex.w.QueryRowContext(ctx, ex.q("CRDSchemaInsert"),
			p.Name, p.Group, p.Kind, p.Scope, opID, p.Version, p.Digest, p.Definition, ex.ts(p.Now),
			p.Note.Text, p.Note.URL))
		return err
	})
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, ErrForeignKey) {
			return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
		}
		return nil, fmt.Errorf("insert revision %s of CRD %q: %w", p.Digest, p.Name, err)
	}
	return s, nil
}

func (e *executor) CRDSchemaList(ctx context.Context, p *store.CRDSchemaListParams) ([]*store.CRDSchema, error) {
	l := newListQuery(p.Name)
	if p.OperatorID != "" {
		id, ok := normalizeID(p.OperatorID)
		if !ok {
			return []*store.CRDSchema{}, nil
		}
		l.where("operator_id = ?", id)
	}
	q, args := l.build(e.q("CRDSchemaList"), store.MaxLimit*10)
	return queryList(ctx, e, q, args, fmt.Sprintf("list revisions of CRD %q", p.Name), scanCRDSchema)
}

func (e *executor) CRDList(ctx context.Context, p *store.CRDListParams) ([]*store.CRDSummary, error) {
	l := newListQuery()
	if p.Group != "" {
		l.where("s.crd_group = ?", p.Group)
	}
	if p.After != "" {
		l.where("s.name > ?", p.After)
	}
	q, args := l.build(e.q("CRDList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, "list CRDs", scanCRDSummary)
}

func (e *executor) CRDApprovalCreate(ctx context.Context, p *store.CRDApprovalCreateParams) (*store.CRDApproval, error) {
	a, err := scanCRDApproval(e.w.QueryRowContext(ctx, e.q("CRDApprovalCreate"),
		p.CRDName, p.FromDigest, p.ToDigest, p.ToVersion, p.ApprovedBy, p.Reason, p.RequestID, e.ts(p.Now)))
	if err != nil {
		return nil, fmt.Errorf("record approval of CRD %q: %w", p.CRDName, e.mapErr(err))
	}
	return a, nil
}

func (e *executor) CRDApprovalList(ctx context.Context, crdName string) ([]*store.CRDApproval, error) {
	return queryList(ctx, e, e.q("CRDApprovalList"), []any{crdName},
		fmt.Sprintf("list approvals of CRD %q", crdName), scanCRDApproval)
}
