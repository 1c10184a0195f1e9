package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func ticketUse(b *testBundle, jti string, expires time.Time) *store.LoginTicketUseParams {
	return &store.LoginTicketUseParams{JTI: jti, Subject: "alice", ExpiresAt: expires, Now: b.now}
}

var loginTicketCases = []testCase{
	{"UsedOnce", func(t *testing.T, b *testBundle) {
		expires := b.now.Add(15 * time.Minute)
		got, err := b.store.LoginTicketUse(b.ctx, ticketUse(b, "jti-1", expires))
		requireOK(t, err, "first use")
		requireEqual(t, got, &store.LoginTicket{JTI: "jti-1", Subject: "alice", ExpiresAt: expires, UsedAt: b.now}, "recorded")
		_, err = b.store.LoginTicketUse(b.ctx, ticketUse(b, "jti-1", expires))
		requireErr(t, err, store.ErrAlreadyExists, "second use")
		_, err = b.store.LoginTicketUse(b.ctx, ticketUse(b, "jti-2", expires))
		requireOK(t, err, "another ticket")
	}},
	{"RefusesIncomplete", func(t *testing.T, b *testBundle) {
		for name, p := range map[string]*store.LoginTicketUseParams{
			"no id":      {Subject: "alice", ExpiresAt: b.now, Now: b.now},
			"long id":    {JTI: strings.Repeat("x", 129), Subject: "alice", ExpiresAt: b.now, Now: b.now},
			"no subject": {JTI: "j", ExpiresAt: b.now, Now: b.now},
			"no expiry":  {JTI: "j", Subject: "alice", Now: b.now},
		} {
			if _, err := b.store.LoginTicketUse(b.ctx, p); err == nil || errors.Is(err, store.ErrAlreadyExists) {
				t.Errorf("%s: %v, want a plain error", name, err)
			}
		}
	}},
	{"PurgeExpired", func(t *testing.T, b *testBundle) {
		for i, exp := range []time.Duration{-time.Hour, -time.Minute, time.Minute, time.Hour} {
			_, err := b.store.LoginTicketUse(b.ctx, ticketUse(b, "jti-"+string(rune('a'+i)), b.now.Add(exp)))
			requireOK(t, err, "use")
		}
		n, err := b.store.LoginTicketPurge(b.ctx, b.now)
		requireOK(t, err, "purge")
		requireEqual(t, n, 2, "purged")
		// A purged id can be recorded again (its ticket expired: the token check refuses it first);
		// the others are still recorded.
		_, err = b.store.LoginTicketUse(b.ctx, ticketUse(b, "jti-a", b.now.Add(time.Minute)))
		requireOK(t, err, "purged id again")
		_, err = b.store.LoginTicketUse(b.ctx, ticketUse(b, "jti-c", b.now.Add(time.Minute)))
		requireErr(t, err, store.ErrAlreadyExists, "a live ticket after the purge")
		n, err = b.store.LoginTicketPurge(b.ctx, b.now)
		requireOK(t, err, "purge again")
		requireEqual(t, n, 0, "purged again")
	}},
	{"ConcurrentUsesOneWins", func(t *testing.T, b *testBundle) {
		jti := uuid.NewString()
		errs := parallel(func(int) error {
			_, err := b.store.LoginTicketUse(b.ctx, ticketUse(b, jti, b.now.Add(time.Minute)))
			return err
		})
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrAlreadyExists):
				t.Errorf("a loser got %v, want ErrAlreadyExists", err)
			}
		}
		requireEqual(t, won, 1, "winners")
	}},
	{"UseInTransactionRollsBack", func(t *testing.T, b *testBundle) {
		err := store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.LoginTicketUse(ctx, ticketUse(b, "jti-tx", b.now.Add(time.Minute))); err != nil {
				return err
			}
			return store.ErrConflict
		})
		requireErr(t, err, store.ErrConflict, "rolled back")
		_, err = b.store.LoginTicketUse(b.ctx, ticketUse(b, "jti-tx", b.now.Add(time.Minute)))
		requireOK(t, err, "the rolled-back use left nothing")
	}},
}
