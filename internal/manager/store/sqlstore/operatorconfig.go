package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames, "OperatorConfigGet", "OperatorConfigSet", "OperatorConfigListSealed")
}

// Columns: id, credentials_ciphertext, credentials_key_id, default_values.
func scanOperatorConfig(row scanner) (*store.OperatorConfig, error) {
	var c store.OperatorConfig
	if err := row.Scan(&c.OperatorID, &c.CredentialsCiphertext, &c.KeyID, rawJSON{&c.DefaultValues}); err != nil {
		return nil, err
	}
	if len(c.CredentialsCiphertext) == 0 {
		c.CredentialsCiphertext = nil
	}
	return &c, nil
}

func (e *executor) OperatorConfigGet(ctx context.Context, operatorID string) (*store.OperatorConfig, error) {
	id, ok := normalizeID(operatorID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", operatorID, store.ErrNotFound)
	}
	c, err := scanOperatorConfig(e.w.QueryRowContext(ctx, e.q("OperatorConfigGet"), id))
	if err != nil {
		return nil, fmt.Errorf("operator config %s: %w", id, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) OperatorConfigSet(ctx context.Context, p *store.OperatorConfigSetParams) (*store.OperatorConfig, error) {
	id, ok := normalizeID(p.OperatorID)
	if !ok {
		return nil, fmt.Errorf("operator id %q: %w", p.OperatorID, store.ErrNotFound)
	}
	if len(p.DefaultValues) > 0 && !json.Valid(p.DefaultValues) {
		return nil, fmt.Errorf("operator %s: default values are not a JSON document", id)
	}
	c, err := scanOperatorConfig(e.w.QueryRowContext(ctx, e.q("OperatorConfigSet"), id,
		emptyNil(p.CredentialsCiphertext), p.KeyID, jsonArg(p.DefaultValues), e.ts(p.Now)))
	if err != nil {
		return nil, fmt.Errorf("set operator config %s: %w", id, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) OperatorConfigListSealed(ctx context.Context) ([]*store.OperatorConfig, error) {
	rows, err := e.w.QueryContext(ctx, e.q("OperatorConfigListSealed"))
	if err != nil {
		return nil, fmt.Errorf("list sealed operator credentials: %w", e.mapErr(err))
	}
	defer rows.Close()
	var out []*store.OperatorConfig
	for rows.Next() {
		c, err := scanOperatorConfig(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
