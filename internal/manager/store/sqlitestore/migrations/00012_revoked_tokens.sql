-- Signed-out sessions (issue 20, sign-out ends the session on the server): the tokens revoked
-- before they expire (DELETE /api/v1/session), by issuer and id (their iss and jti claims), so
-- that every replica refuses them; a row is kept until its token expires (then purged: the
-- token's own expiry refuses it from then on). Times are TEXT in sqlstore.TimeLayout.

-- +goose Up
CREATE TABLE revoked_tokens (
    issuer     TEXT NOT NULL,
    jti        TEXT NOT NULL,
    subject    TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    revoked_at TEXT NOT NULL,
    PRIMARY KEY (issuer, jti)
) STRICT, WITHOUT ROWID;
CREATE INDEX revoked_tokens_expires_at ON revoked_tokens (expires_at);

-- +goose Down
DROP TABLE revoked_tokens;
