package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames,
		"CRDSchemaGetByID", "CRDSchemaGetByDigest", "CRDSchemaSetNote",
		"CRDVersionRecordUpsert", "CRDVersionRevisionsDelete", "CRDVersionRevisionInsert",
		"CRDVersionList", "CRDVersionRecordList",
		"DeploymentMigrationNotesDelete", "DeploymentMigrationNoteInsert", "DeploymentMigrationNotesListMany")
}

var _ store.CRDHistoryExecutor = (*executor)(nil)

func (e *executor) CRDSchemaGetByID(ctx context.Context, id int64) (*store.CRDSchema, error) {
	s, err := scanCRDSchema(e.r.QueryRowContext(ctx, e.q("CRDSchemaGetByID"), id))
	if err != nil {
		return nil, fmt.Errorf("get CRD revision %d: %w", id, e.mapErr(err))
	}
	return s, nil
}

func (e *executor) CRDSchemaGetByDigest(ctx context.Context, p *store.CRDSchemaGetByDigestParams) (*store.CRDSchema, error) {
	source := ""
	if p.OperatorID != "" {
		id, ok := normalizeID(p.OperatorID)
		if !ok {
			return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
		}
		source = id
	}
	s, err := scanCRDSchema(e.r.QueryRowContext(ctx, e.q("CRDSchemaGetByDigest"), p.Name, source, p.Digest))
	if err != nil {
		return nil, fmt.Errorf("get revision %s of CRD %q: %w", p.Digest, p.Name, e.mapErr(err))
	}
	return s, nil
}

func (e *executor) CRDSchemaSetNote(ctx context.Context, p *store.CRDSchemaSetNoteParams) (*store.CRDSchema, error) {
	s, err := scanCRDSchema(e.w.QueryRowContext(ctx, e.q("CRDSchemaSetNote"), p.ID, p.Note.Text, p.Note.URL))
	if err != nil {
		return nil, fmt.Errorf("set the migration note of CRD revision %d: %w", p.ID, e.mapErr(err))
	}
	return s, nil
}

func (e *executor) CRDVersionSet(ctx context.Context, p *store.CRDVersionSetParams) ([]*store.CRDShipped, error) {
	opID, ok := normalizeID(p.OperatorID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
	}
	names := make([]string, 0, len(p.Revisions))
	for n := range p.Revisions {
		names = append(names, n)
	}
	sort.Strings(names)
	err := e.atomic(ctx, func(ex *executor) error {
		if _, err := ex.w.ExecContext(ctx, ex.q("CRDVersionRecordUpsert"), opID, p.Version, ex.ts(p.Now)); err != nil {
			return err
		}
		if _, err := ex.w.ExecContext(ctx, ex.q("CRDVersionRevisionsDelete"), opID, p.Version); err != nil {
			return err
		}
		for _, n := range names {
			if _, err := ex.w.ExecContext(ctx, ex.q("CRDVersionRevisionInsert"), opID, p.Version, n, p.Revisions[n]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, ErrForeignKey) {
			err = store.ErrNotFound
		}
		return nil, fmt.Errorf("record the CRDs of operator %s version %s: %w", p.OperatorID, p.Version, err)
	}
	return e.CRDVersionList(ctx, &store.CRDVersionListParams{OperatorID: opID, Version: p.Version})
}

// Columns: operator_id, version, crd_name, schema_id, digest, has_note.
func scanCRDShipped(row scanner) (*store.CRDShipped, error) {
	var c store.CRDShipped
	if err := row.Scan(&c.OperatorID, &c.Version, &c.CRDName, &c.SchemaID, &c.Digest, &c.HasNote); err != nil {
		return nil, err
	}
	return &c, nil
}

func (e *executor) CRDVersionList(ctx context.Context, p *store.CRDVersionListParams) ([]*store.CRDShipped, error) {
	if p.OperatorID == "" && p.CRDName == "" {
		return nil, errors.New("list the CRDs of operator versions: give an operator or a CRD name")
	}
	l := newListQuery()
	if p.OperatorID != "" {
		id, ok := normalizeID(p.OperatorID)
		if !ok {
			return []*store.CRDShipped{}, nil
		}
		l.where("r.operator_id = ?", id)
	}
	if p.Version != "" {
		l.where("r.version = ?", p.Version)
	}
	if p.CRDName != "" {
		l.where("r.crd_name = ?", p.CRDName)
	}
	q, args := l.buildAll(e.q("CRDVersionList"))
	return queryList(ctx, e, q, args, "list the CRDs of operator versions", scanCRDShipped)
}

func (e *executor) CRDVersionRecordList(ctx context.Context, operatorID string) ([]string, error) {
	id, ok := normalizeID(operatorID)
	if !ok {
		return []string{}, nil
	}
	return queryList(ctx, e, e.q("CRDVersionRecordList"), []any{id}, "list the recorded versions of operator "+operatorID,
		func(row scanner) (string, error) {
			var v string
			err := row.Scan(&v)
			return v, err
		})
}

func (e *executor) DeploymentMigrationNotesSet(ctx context.Context, deploymentID string, notes []*store.DeploymentMigrationNote) ([]*store.DeploymentMigrationNote, error) {
	id, ok := normalizeID(deploymentID)
	if !ok {
		return nil, fmt.Errorf("deployment %q: %w", deploymentID, store.ErrNotFound)
	}
	err := e.atomic(ctx, func(ex *executor) error {
		if _, err := ex.w.ExecContext(ctx, ex.q("DeploymentMigrationNotesDelete"), id); err != nil {
			return err
		}
		for i, n := range notes {
			if _, err := ex.w.ExecContext(ctx, ex.q("DeploymentMigrationNoteInsert"), id, i, n.CRDName, n.Version, n.Digest,
				n.Note.Text, n.Note.URL); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, ErrForeignKey) {
			err = store.ErrNotFound
		}
		return nil, fmt.Errorf("set the migration notes of deployment %s: %w", deploymentID, err)
	}
	out := make([]*store.DeploymentMigrationNote, 0, len(notes))
	for _, n := range notes {
		c := *n
		c.DeploymentID = id
		out = append(out, &c)
	}
	return out, nil
}

func (e *executor) DeploymentMigrationNotesListMany(ctx context.Context, deploymentIDs []string) (map[string][]*store.DeploymentMigrationNote, error) {
	ids := make([]string, 0, len(deploymentIDs))
	for _, raw := range deploymentIDs {
		if id, ok := normalizeID(raw); ok {
			ids = append(ids, id)
		}
	}
	out := map[string][]*store.DeploymentMigrationNote{}
	if len(ids) == 0 {
		return out, nil
	}
	arg, err := idsArg(ids)
	if err != nil {
		return nil, fmt.Errorf("list migration notes: %w", err)
	}
	list, err := queryList(ctx, e, e.q("DeploymentMigrationNotesListMany"), []any{arg}, "list migration notes",
		func(row scanner) (*store.DeploymentMigrationNote, error) {
			var n store.DeploymentMigrationNote
			err := row.Scan(&n.DeploymentID, &n.CRDName, &n.Version, &n.Digest, &n.Note.Text, &n.Note.URL)
			return &n, err
		})
	if err != nil {
		return nil, err
	}
	for _, n := range list {
		out[n.DeploymentID] = append(out[n.DeploymentID], n)
	}
	return out, nil
}
