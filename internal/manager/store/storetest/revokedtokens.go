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

const mintIssuer = "slipway-manager"

func revoke(b *testBundle, issuer, jti string, expires time.Time) *store.TokenRevokeParams {
	return &store.TokenRevokeParams{Issuer: issuer, JTI: jti, Subject: "alice", ExpiresAt: expires, Now: b.now}
}

func requireRevoked(t *testing.T, b *testBundle, issuer, jti string, want bool, what string) {
	t.Helper()
	got, err := b.store.TokenRevoked(b.ctx, issuer, jti)
	requireOK(t, err, what)
	requireEqual(t, got, want, what)
}

var revokedTokenCases = []testCase{
	{"RevokedOnceByIssuerAndID", func(t *testing.T, b *testBundle) {
		expires := b.now.Add(12 * time.Hour)
		requireRevoked(t, b, mintIssuer, "jti-1", false, "before")
		got, err := b.store.TokenRevoke(b.ctx, revoke(b, mintIssuer, "jti-1", expires))
		requireOK(t, err, "revoke")
		want := &store.RevokedToken{Issuer: mintIssuer, JTI: "jti-1", Subject: "alice", ExpiresAt: expires, RevokedAt: b.now}
		requireEqual(t, got, want, "recorded")
		requireRevoked(t, b, mintIssuer, "jti-1", true, "after")
		// The same id from another issuer, or without one, is another token.
		requireRevoked(t, b, "https://id.example.com", "jti-1", false, "another issuer")
		requireRevoked(t, b, "", "jti-1", false, "no issuer")
		requireRevoked(t, b, mintIssuer, "jti-2", false, "another id")
		// Revoking again keeps the first record.
		again := revoke(b, mintIssuer, "jti-1", expires.Add(time.Hour))
		again.Now, again.Subject = b.now.Add(time.Minute), "mallory"
		got, err = b.store.TokenRevoke(b.ctx, again)
		requireOK(t, err, "revoke again")
		requireEqual(t, got, want, "the first record")
		_, err = b.store.TokenRevoke(b.ctx, revoke(b, "", "jti-1", expires))
		requireOK(t, err, "the same id without an issuer")
		requireRevoked(t, b, "", "jti-1", true, "no issuer, revoked")
	}},
	{"RefusesIncomplete", func(t *testing.T, b *testBundle) {
		for name, p := range map[string]*store.TokenRevokeParams{
			"no id":       {Issuer: mintIssuer, Subject: "alice", ExpiresAt: b.now, Now: b.now},
			"long id":     {Issuer: mintIssuer, JTI: strings.Repeat("x", store.MaxTokenIDLen+1), Subject: "alice", ExpiresAt: b.now, Now: b.now},
			"long issuer": {Issuer: strings.Repeat("i", store.MaxTokenIssuerLen+1), JTI: "j", Subject: "alice", ExpiresAt: b.now, Now: b.now},
			"no subject":  {Issuer: mintIssuer, JTI: "j", ExpiresAt: b.now, Now: b.now},
			"no expiry":   {Issuer: mintIssuer, JTI: "j", Subject: "alice", Now: b.now},
		} {
			if _, err := b.store.TokenRevoke(b.ctx, p); err == nil || errors.Is(err, store.ErrAlreadyExists) {
				t.Errorf("%s: %v, want a plain error", name, err)
			}
		}
		requireRevoked(t, b, mintIssuer, "j", false, "nothing recorded")
	}},
	{"PurgeExpired", func(t *testing.T, b *testBundle) {
		ids := []string{"gone-1", "gone-2", "live-1", "live-2"}
		for i, exp := range []time.Duration{-time.Hour, -time.Minute, time.Minute, time.Hour} {
			_, err := b.store.TokenRevoke(b.ctx, revoke(b, mintIssuer, ids[i], b.now.Add(exp)))
			requireOK(t, err, "revoke")
		}
		n, err := b.store.TokenRevocationPurge(b.ctx, b.now)
		requireOK(t, err, "purge")
		requireEqual(t, n, 2, "purged")
		for _, id := range ids {
			requireRevoked(t, b, mintIssuer, id, strings.HasPrefix(id, "live"), id)
		}
		n, err = b.store.TokenRevocationPurge(b.ctx, b.now)
		requireOK(t, err, "purge again")
		requireEqual(t, n, 0, "purged again")
	}},
	{"ConcurrentRevokesAllSucceed", func(t *testing.T, b *testBundle) {
		jti := uuid.NewString()
		for _, err := range parallel(func(int) error {
			_, err := b.store.TokenRevoke(b.ctx, revoke(b, mintIssuer, jti, b.now.Add(time.Hour)))
			return err
		}) {
			requireOK(t, err, "a concurrent revocation")
		}
		requireRevoked(t, b, mintIssuer, jti, true, "revoked")
	}},
	{"RevokeInTransactionRollsBack", func(t *testing.T, b *testBundle) {
		err := store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.TokenRevoke(ctx, revoke(b, mintIssuer, "jti-tx", b.now.Add(time.Hour))); err != nil {
				return err
			}
			revoked, err := tx.TokenRevoked(ctx, mintIssuer, "jti-tx")
			if err != nil || !revoked {
				t.Errorf("inside the transaction: %v, %v", revoked, err)
			}
			return store.ErrConflict
		})
		requireErr(t, err, store.ErrConflict, "rolled back")
		requireRevoked(t, b, mintIssuer, "jti-tx", false, "the rolled-back revocation left nothing")
	}},
}
