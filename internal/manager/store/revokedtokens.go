package store

import (
	"context"
	"time"
)

// RevokedToken is an access token ended before it expires (DELETE /api/v1/session, a sign-out):
// named by its issuer and id (its iss and jti claims), it is refused by every replica from then
// on. A record is kept until the token expires; after that the token's own expiry refuses it.
type RevokedToken struct {
	Issuer    string
	JTI       string
	Subject   string
	ExpiresAt time.Time
	RevokedAt time.Time
}

// TokenRevokeParams revokes one token.
type TokenRevokeParams struct {
	// Issuer is the token's iss claim ("" when it has none); JTI its jti claim (1-128 characters).
	Issuer    string
	JTI       string
	Subject   string
	ExpiresAt time.Time
	Now       time.Time
}

// MaxTokenIDLen bounds a revocable token's id (a jti claim; the manager's are 22 characters);
// MaxTokenIssuerLen its issuer.
const (
	MaxTokenIDLen     = 128
	MaxTokenIssuerLen = 1024
)

// TokenRevocationExecutor records revoked tokens (migration 00012).
type TokenRevocationExecutor interface {
	// TokenRevoke records the token (p.Issuer, p.JTI) as revoked at p.Now. Revoking it again
	// is no error: the first record stays and is returned (two sign-outs at once both succeed).
	TokenRevoke(ctx context.Context, p *TokenRevokeParams) (*RevokedToken, error)
	// TokenRevoked reports whether the token (issuer, jti) is revoked: one primary-key lookup.
	TokenRevoked(ctx context.Context, issuer, jti string) (bool, error)
	// TokenRevocationPurge deletes the records of tokens that expired before before and
	// returns how many.
	TokenRevocationPurge(ctx context.Context, before time.Time) (int, error)
}
