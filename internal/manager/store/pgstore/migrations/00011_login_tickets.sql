-- One-time sign-in tickets (issue 20, the web UI's sign-in links): the id (jti) of each ticket
-- exchanged for a session token, recorded once so that a second use is refused, kept until the
-- ticket expires (then purged).

-- +goose Up
CREATE TABLE login_tickets (
    jti        text        PRIMARY KEY,
    subject    text        NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz NOT NULL
);
CREATE INDEX login_tickets_expires_at ON login_tickets (expires_at);

-- +goose Down
DROP TABLE login_tickets;
