-- Revoked tokens (store/revokedtokens.go, migration 00012).

-- name: TokenRevoke
-- $1 issuer, $2 jti, $3 subject, $4 expires at, $5 now. Revoking a token again keeps (and
-- answers) the first record: the no-op update makes RETURNING answer the row that is there.
INSERT INTO revoked_tokens (issuer, jti, subject, expires_at, revoked_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (issuer, jti) DO UPDATE SET jti = revoked_tokens.jti
RETURNING subject, expires_at, revoked_at;

-- name: TokenRevoked
-- $1 issuer, $2 jti: a row when the token is revoked (a primary-key lookup, on every request
-- that carries a token with an id).
SELECT 1 FROM revoked_tokens
WHERE issuer = $1 AND jti = $2;

-- name: TokenRevocationPurge
-- $1: records of tokens that expired before it go (the token's own expiry refuses it then).
DELETE FROM revoked_tokens
WHERE expires_at < $1;
