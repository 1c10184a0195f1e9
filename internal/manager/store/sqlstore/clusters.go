package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// The column order of every cluster query: id, name, environment, kubernetes_version, health,
// health_reason, health_checked_at, kubeconfig_ciphertext, token_ciphertext, token_expires_at,
// key_id, created_at, updated_at.
func scanCluster(row scanner) (*store.Cluster, error) {
	var c store.Cluster
	var env, health string
	err := row.Scan(&c.ID, &c.Name, &env, &c.KubernetesVersion, &health, &c.HealthReason,
		nullTimeDest{&c.HealthCheckedAt}, &c.KubeconfigCiphertext, &c.TokenCiphertext,
		nullTimeDest{&c.TokenExpiresAt}, &c.KeyID, timeDest{&c.CreatedAt}, timeDest{&c.UpdatedAt})
	if err != nil {
		return nil, err
	}
	c.Environment, c.Health = store.Environment(env), store.Health(health)
	return &c, nil
}

func (e *executor) ClusterCreate(ctx context.Context, p *store.ClusterCreateParams) (*store.Cluster, error) {
	id, ok := normalizeID(p.ID)
	if !ok {
		return nil, fmt.Errorf("create cluster %q: id %q is not a UUID", p.Name, p.ID)
	}
	health := p.Health
	if health == "" {
		health = store.HealthUnknown
	}
	now := e.ts(p.Now)
	c, err := scanCluster(e.w.QueryRowContext(ctx, e.q("ClusterCreate"),
		id, p.Name, string(p.Environment), p.KubernetesVersion, string(health), p.HealthReason,
		e.tsPtr(p.HealthCheckedAt), p.KubeconfigCiphertext, emptyNil(p.TokenCiphertext),
		e.tsPtr(p.TokenExpiresAt), p.KeyID, now, now))
	if err != nil {
		return nil, fmt.Errorf("create cluster %q: %w", p.Name, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) ClusterGetByName(ctx context.Context, name string) (*store.Cluster, error) {
	c, err := scanCluster(e.r.QueryRowContext(ctx, e.q("ClusterGetByName"), name))
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) ClusterList(ctx context.Context, p *store.ClusterListParams) ([]*store.Cluster, error) {
	l := newListQuery()
	if p.Environment != "" {
		l.where("environment = ?", string(p.Environment))
	}
	if p.Health != "" {
		l.where("health = ?", string(p.Health))
	}
	if p.After != "" {
		l.where("name > ?", p.After)
	}
	q, args := l.build(e.q("ClusterList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, "list clusters", scanCluster)
}

func (e *executor) ClusterUpdateHealth(ctx context.Context, p *store.ClusterUpdateHealthParams) (*store.Cluster, error) {
	c, err := scanCluster(e.w.QueryRowContext(ctx, e.q("ClusterUpdateHealth"),
		p.Name, string(p.Health), p.Reason, p.KubernetesVersion, e.ts(p.CheckedAt)))
	if err != nil {
		return nil, fmt.Errorf("update health of cluster %q: %w", p.Name, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) ClusterUpdateCredentials(ctx context.Context, p *store.ClusterUpdateCredentialsParams) (*store.Cluster, error) {
	c, err := scanCluster(e.w.QueryRowContext(ctx, e.q("ClusterUpdateCredentials"),
		p.Name, p.KubeconfigCiphertext, emptyNil(p.TokenCiphertext), e.tsPtr(p.TokenExpiresAt),
		p.KeyID, e.ts(p.Now)))
	if err != nil {
		return nil, fmt.Errorf("update credentials of cluster %q: %w", p.Name, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) ClusterDelete(ctx context.Context, name string) error {
	res, err := e.w.ExecContext(ctx, e.q("ClusterDelete"), name)
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, ErrForeignKey) {
			return fmt.Errorf("delete cluster %q: still referenced: %w", name, err)
		}
		return fmt.Errorf("delete cluster %q: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete cluster %q: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("cluster %q: %w", name, store.ErrNotFound)
	}
	return nil
}

func (e *executor) ClusterCount(ctx context.Context) (int, error) {
	return e.count(ctx, "ClusterCount", "count clusters")
}

func (e *executor) count(ctx context.Context, query, what string) (int, error) {
	var n int
	if err := e.r.QueryRowContext(ctx, e.q(query)).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", what, e.mapErr(err))
	}
	return n, nil
}

// queryList runs a list query and scans every row; an empty result is an empty, non-nil slice.
// attach loads the children of parents with the named query (its one argument: the parents' ids
// as a JSON array) and adds each child to its parent, in the query's order.
func attach[P, C any](ctx context.Context, e *executor, parents []P, idOf func(P) string, query, what string,
	scan func(scanner) (C, error), parentOf func(C) string, add func(P, C)) error {
	if len(parents) == 0 {
		return nil
	}
	ids := make([]string, len(parents))
	byID := make(map[string]P, len(parents))
	for i, p := range parents {
		ids[i] = idOf(p)
		byID[ids[i]] = p
	}
	arg, err := idsArg(ids)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	children, err := queryList(ctx, e, e.q(query), []any{arg}, what, scan)
	if err != nil {
		return err
	}
	for _, c := range children {
		if p, ok := byID[parentOf(c)]; ok {
			add(p, c)
		}
	}
	return nil
}

func queryList[T any](ctx context.Context, e *executor, q string, args []any, what string, scan func(scanner) (T, error)) ([]T, error) {
	rows, err := e.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, e.mapErr(err))
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, e.mapErr(err))
	}
	return out, nil
}
