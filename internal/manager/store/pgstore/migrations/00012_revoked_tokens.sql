-- Signed-out sessions (issue 20, sign-out ends the session on the server): the tokens revoked
-- before they expire (DELETE /api/v1/session), by issuer and id (their iss and jti claims), so
-- that every replica refuses them; a row is kept until its token expires (then purged: the
-- token's own expiry refuses it from then on).

-- +goose Up
CREATE TABLE revoked_tokens (
    issuer     text        NOT NULL,
    jti        text        NOT NULL,
    subject    text        NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz NOT NULL,
    PRIMARY KEY (issuer, jti)
);
CREATE INDEX revoked_tokens_expires_at ON revoked_tokens (expires_at);

-- +goose Down
DROP TABLE revoked_tokens;
