package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/Masterminds/semver/v3"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Columns: id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at,
// deleted_at.
func scanOperator(row scanner) (*store.Operator, error) {
	var o store.Operator
	err := row.Scan(&o.ID, &o.Name, &o.Namespace, &o.ChartRepository, &o.ChartName,
		&o.VersionFilter, timeDest{&o.CreatedAt}, timeDest{&o.UpdatedAt}, nullTimeDest{&o.DeletedAt})
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// Columns: operator_id, version, app_version, digest, created_at, removed_at, removed_reason.
func scanOperatorVersion(row scanner) (*store.OperatorVersion, error) {
	var v store.OperatorVersion
	if err := row.Scan(&v.OperatorID, &v.Version, &v.AppVersion, &v.Digest, timeDest{&v.CreatedAt},
		nullTimeDest{&v.RemovedAt}, &v.RemovedReason); err != nil {
		return nil, err
	}
	return &v, nil
}

func (e *executor) OperatorCreate(ctx context.Context, p *store.OperatorCreateParams) (*store.Operator, error) {
	id, ok := normalizeID(p.ID)
	if !ok {
		return nil, fmt.Errorf("create operator %q: id %q is not a UUID", p.Name, p.ID)
	}
	now := e.ts(p.Now)
	o, err := scanOperator(e.w.QueryRowContext(ctx, e.q("OperatorCreate"),
		id, p.Name, p.Namespace, p.ChartRepository, p.ChartName, p.VersionFilter, now, now))
	if err != nil {
		return nil, fmt.Errorf("create operator %q: %w", p.Name, e.mapErr(err))
	}
	return o, nil
}

func (e *executor) OperatorGetByName(ctx context.Context, name string) (*store.Operator, error) {
	o, err := scanOperator(e.r.QueryRowContext(ctx, e.q("OperatorGetByName"), name))
	if err != nil {
		return nil, fmt.Errorf("operator %q: %w", name, e.mapErr(err))
	}
	return o, nil
}

func (e *executor) OperatorGetByID(ctx context.Context, id string) (*store.Operator, error) {
	nid, ok := normalizeID(id)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", id, store.ErrNotFound)
	}
	o, err := scanOperator(e.r.QueryRowContext(ctx, e.q("OperatorGetByID"), nid))
	if err != nil {
		return nil, fmt.Errorf("operator id %q: %w", id, e.mapErr(err))
	}
	return o, nil
}

func (e *executor) OperatorList(ctx context.Context, p *store.OperatorListParams) ([]*store.Operator, error) {
	l := newListQuery()
	if p.Namespace != "" {
		l.where("namespace = ?", p.Namespace)
	}
	if p.After != "" {
		l.where("name > ?", p.After)
	}
	q, args := l.build(e.q("OperatorList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, "list operators", scanOperator)
}

func (e *executor) OperatorCount(ctx context.Context) (int, error) {
	return e.count(ctx, "OperatorCount", "count operators")
}

func (e *executor) OperatorVersionUpsert(ctx context.Context, p *store.OperatorVersionUpsertParams) (*store.OperatorVersion, error) {
	id, ok := normalizeID(p.OperatorID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
	}
	if p.Version == "" {
		return nil, fmt.Errorf("upsert version of operator %s: empty version", id)
	}
	v, err := scanOperatorVersion(e.w.QueryRowContext(ctx, e.q("OperatorVersionUpsert"),
		id, p.Version, p.AppVersion, p.Digest, e.ts(p.Now)))
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, ErrForeignKey) {
			return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
		}
		return nil, fmt.Errorf("upsert version %s of operator %s: %w", p.Version, id, err)
	}
	return v, nil
}

// OperatorVersionList returns the versions in sortVersions' order.
func (e *executor) OperatorVersionList(ctx context.Context, operatorID string) ([]*store.OperatorVersion, error) {
	id, ok := normalizeID(operatorID)
	if !ok {
		return []*store.OperatorVersion{}, nil
	}
	vs, err := queryList(ctx, e, e.q("OperatorVersionList"), []any{id}, "list operator versions", scanOperatorVersion)
	if err != nil {
		return nil, err
	}
	sortVersions(vs)
	return vs, nil
}

// OperatorVersionListMany lists the versions of several operators in one query.
func (e *executor) OperatorVersionListMany(ctx context.Context, operatorIDs []string) (map[string][]*store.OperatorVersion, error) {
	ids := make([]string, 0, len(operatorIDs))
	for _, raw := range operatorIDs {
		if id, ok := normalizeID(raw); ok {
			ids = append(ids, id)
		}
	}
	out := map[string][]*store.OperatorVersion{}
	if len(ids) == 0 {
		return out, nil
	}
	arg, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("list operator versions: %w", err)
	}
	vs, err := queryList(ctx, e, e.q("OperatorVersionListMany"), []any{string(arg)}, "list operator versions", scanOperatorVersion)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		out[v.OperatorID] = append(out[v.OperatorID], v)
	}
	for _, list := range out {
		sortVersions(list)
	}
	return out, nil
}

// sortVersions orders versions newest semver first; versions that are not semver (the discovery
// skips them, so only hand-made rows) come last, by text.
func sortVersions(vs []*store.OperatorVersion) {
	parsed := make(map[string]*semver.Version, len(vs))
	for _, v := range vs {
		if sv, err := semver.NewVersion(v.Version); err == nil {
			parsed[v.Version] = sv
		}
	}
	slices.SortStableFunc(vs, func(a, b *store.OperatorVersion) int {
		sa, sb := parsed[a.Version], parsed[b.Version]
		switch {
		case sa != nil && sb != nil:
			if c := sb.Compare(sa); c != 0 {
				return c
			}
			return cmp.Compare(a.Version, b.Version)
		case sa != nil:
			return -1
		case sb != nil:
			return 1
		default:
			return cmp.Compare(a.Version, b.Version)
		}
	})
}
