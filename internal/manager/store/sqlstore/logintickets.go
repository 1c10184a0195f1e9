package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames, "LoginTicketUse", "LoginTicketPurge")
}

// maxTicketID bounds a ticket id (a jti claim): the manager's are 22 characters.
const maxTicketID = 128

func (e *executor) LoginTicketUse(ctx context.Context, p *store.LoginTicketUseParams) (*store.LoginTicket, error) {
	switch {
	case strings.TrimSpace(p.JTI) == "" || len(p.JTI) > maxTicketID:
		return nil, fmt.Errorf("use login ticket: its id must be 1-%d characters, not %d", maxTicketID, len(p.JTI))
	case strings.TrimSpace(p.Subject) == "":
		return nil, fmt.Errorf("use login ticket %s: empty subject", p.JTI)
	case p.ExpiresAt.IsZero():
		return nil, fmt.Errorf("use login ticket %s: no expiry", p.JTI)
	}
	t := &store.LoginTicket{JTI: p.JTI, Subject: p.Subject}
	err := e.w.QueryRowContext(ctx, e.q("LoginTicketUse"), p.JTI, p.Subject, e.ts(p.ExpiresAt), e.ts(p.Now)).
		Scan(timeDest{&t.ExpiresAt}, timeDest{&t.UsedAt})
	if err != nil {
		return nil, fmt.Errorf("use login ticket %s: %w", p.JTI, e.mapErr(err))
	}
	return t, nil
}

func (e *executor) LoginTicketPurge(ctx context.Context, before time.Time) (int, error) {
	res, err := e.w.ExecContext(ctx, e.q("LoginTicketPurge"), e.ts(before))
	if err != nil {
		return 0, fmt.Errorf("purge expired login tickets: %w", e.mapErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge expired login tickets: %w", err)
	}
	return int(n), nil
}
