-- Sign-in tickets used (store/logintickets.go, migration 00011).

-- name: LoginTicketUse
-- $1 jti, $2 subject, $3 expires at, $4 now. A ticket used before: a primary key violation.
INSERT INTO login_tickets (jti, subject, expires_at, used_at)
VALUES ($1, $2, $3, $4)
RETURNING expires_at, used_at;

-- name: LoginTicketPurge
-- $1: records of tickets that expired before it go (the ticket's own expiry refuses it then).
DELETE FROM login_tickets
WHERE expires_at < $1;
