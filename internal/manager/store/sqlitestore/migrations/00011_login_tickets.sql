-- One-time sign-in tickets (issue 20, the web UI's sign-in links): the id (jti) of each ticket
-- exchanged for a session token, recorded once so that a second use is refused, kept until the
-- ticket expires (then purged). Times are TEXT in sqlstore.TimeLayout.

-- +goose Up
CREATE TABLE login_tickets (
    jti        TEXT PRIMARY KEY,
    subject    TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT NOT NULL
) STRICT;
CREATE INDEX login_tickets_expires_at ON login_tickets (expires_at);

-- +goose Down
DROP TABLE login_tickets;
