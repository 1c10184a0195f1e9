package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames, "TokenRevoke", "TokenRevoked", "TokenRevocationPurge")
}

func (e *executor) TokenRevoke(ctx context.Context, p *store.TokenRevokeParams) (*store.RevokedToken, error) {
	switch {
	case strings.TrimSpace(p.JTI) == "" || len(p.JTI) > store.MaxTokenIDLen:
		return nil, fmt.Errorf("revoke token: its id must be 1-%d characters, not %d", store.MaxTokenIDLen, len(p.JTI))
	case len(p.Issuer) > store.MaxTokenIssuerLen:
		return nil, fmt.Errorf("revoke token %s: its issuer is longer than %d characters", p.JTI, store.MaxTokenIssuerLen)
	case strings.TrimSpace(p.Subject) == "":
		return nil, fmt.Errorf("revoke token %s: empty subject", p.JTI)
	case p.ExpiresAt.IsZero():
		return nil, fmt.Errorf("revoke token %s: no expiry", p.JTI)
	}
	t := &store.RevokedToken{Issuer: p.Issuer, JTI: p.JTI}
	err := e.w.QueryRowContext(ctx, e.q("TokenRevoke"), p.Issuer, p.JTI, p.Subject, e.ts(p.ExpiresAt), e.ts(p.Now)).
		Scan(&t.Subject, timeDest{&t.ExpiresAt}, timeDest{&t.RevokedAt})
	if err != nil {
		return nil, fmt.Errorf("revoke token %s: %w", p.JTI, e.mapErr(err))
	}
	return t, nil
}

func (e *executor) TokenRevoked(ctx context.Context, issuer, jti string) (bool, error) {
	var one int
	err := e.r.QueryRowContext(ctx, e.q("TokenRevoked"), issuer, jti).Scan(&one)
	switch err = e.mapErr(err); {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("is token %s revoked: %w", jti, err)
	}
}

func (e *executor) TokenRevocationPurge(ctx context.Context, before time.Time) (int, error) {
	res, err := e.w.ExecContext(ctx, e.q("TokenRevocationPurge"), e.ts(before))
	if err != nil {
		return 0, fmt.Errorf("purge expired token revocations: %w", e.mapErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge expired token revocations: %w", err)
	}
	return int(n), nil
}
