package store

import (
	"context"
	"time"
)

// LoginTicket is a one-time sign-in ticket that was exchanged for a session token (POST
// /api/v1/session): its id (the ticket's jti claim) is recorded once, so a second use is refused.
// A row is kept until the ticket expires; after that the ticket's own expiry refuses it.
type LoginTicket struct {
	JTI       string
	Subject   string
	ExpiresAt time.Time
	UsedAt    time.Time
}

// LoginTicketUseParams records the use of a ticket.
type LoginTicketUseParams struct {
	JTI       string
	Subject   string
	ExpiresAt time.Time
	Now       time.Time
}

// LoginTicketExecutor records sign-in tickets used (migration 00011).
type LoginTicketExecutor interface {
	// LoginTicketUse records that the ticket with p.JTI was used at p.Now: ErrAlreadyExists when
	// it was used before (of two concurrent uses, exactly one succeeds).
	LoginTicketUse(ctx context.Context, p *LoginTicketUseParams) (*LoginTicket, error)
	// LoginTicketPurge deletes the records of tickets that expired before before and returns how many.
	LoginTicketPurge(ctx context.Context, before time.Time) (int, error)
}
