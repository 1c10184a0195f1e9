package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Sign-out: DELETE /api/v1/session revokes the Bearer token it is called with, so that a token
// copied before the user signed out (from a browser's storage, a shell history, a proxy's log)
// stops working at once instead of at its exp (the lesson of Argo CD's advisory about JWTs still
// valid after logout). The token is recorded by issuer and id (its iss and jti claims) in the
// store's revoked_tokens (store.TokenRevocationExecutor), which every replica reads: authenticate
// refuses a revoked token with 401 on any of them, at the cost of one primary-key read per
// request carrying a token with an id.
//
// Every token the manager mints has an id (auth.Mint). A token without one (minted by an older
// manager, or an ID token from an issuer that writes no jti) cannot be revoked: the answer is
// 409 saying so and when the token expires.

// revocationLeeway keeps a revocation past its token's exp for as long as a verifier may still
// accept the token (the largest clock skew a verifier allows), then it is purged.
const revocationLeeway = auth.MaxLeeway

// errSignedOut is a revoked token presented again.
var errSignedOut = &Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthenticated,
	Message: "this session was signed out: sign in again"}

// refuseRevoked refuses a token that was signed out on any replica. A token without an id (or
// with one too long ever to be recorded) cannot have been revoked and costs no read. When the
// store does not answer the request fails (500, like any read the store fails): a sign-out is
// never skipped.
func (s *Server) refuseRevoked(ctx context.Context, id *auth.Identity) error {
	t := id.Token
	if t.ID == "" || len(t.ID) > store.MaxTokenIDLen || len(t.Issuer) > store.MaxTokenIssuerLen {
		return nil
	}
	revoked, err := s.store.TokenRevoked(ctx, t.Issuer, t.ID)
	if err != nil {
		return fmt.Errorf("checking whether the token was signed out: %w", err)
	}
	if revoked {
		return errSignedOut
	}
	return nil
}

// notRevocable says why the token cannot be revoked ("" when it can).
func notRevocable(t auth.TokenInfo) string {
	until := t.ExpiresAt.UTC().Format(time.RFC3339)
	switch {
	case t.ID == "" && t.Issuer == auth.MintIssuer:
		return fmt.Sprintf("this token has no id (jti): it was minted before the manager could revoke tokens, so it stays "+
			"valid until %s; sign in again (or mint a new token with manager token) to get one that can be signed out, "+
			"and rotate the HS256 secret to end every older token at once", until)
	case t.ID == "" && t.Issuer != "":
		return fmt.Sprintf("this token, issued by %s, has no id (jti), so the manager cannot revoke it: it stays valid "+
			"until %s; end the session at the identity provider too", t.Issuer, until)
	case t.ID == "":
		return fmt.Sprintf("this token has no id (jti), so the manager cannot revoke it: it stays valid until %s", until)
	case len(t.ID) > store.MaxTokenIDLen || len(t.Issuer) > store.MaxTokenIssuerLen:
		return fmt.Sprintf("this token's id or issuer is too long to be recorded (at most %d and %d characters), so the "+
			"manager cannot revoke it: it stays valid until %s", store.MaxTokenIDLen, store.MaxTokenIssuerLen, until)
	}
	return ""
}

// deleteSession revokes the caller's token: 204, and from then on every replica refuses it. The
// revocation and its audit record (session.delete) commit together; a token that cannot be
// revoked is 409, audited as failed.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	ctx, now := r.Context(), s.now()
	id, ok := auth.IdentityFrom(ctx)
	if !ok {
		return auth.ErrNoToken
	}
	t := id.Token
	details := map[string]any{"issuer": t.Issuer, "expiresAt": t.ExpiresAt.UTC()}
	if why := notRevocable(t); why != "" {
		details["refused"] = why
		s.audit.Record(ctx, audit.Entry{Action: "session.delete", TargetKind: "session", TargetName: id.Subject,
			Result: audit.Failed, Details: details})
		return &Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: why,
			Details: map[string]any{"reason": "notRevocable", "expiresAt": t.ExpiresAt.UTC()}}
	}
	details["token"] = t.ID
	err := store.WithTx(ctx, s.store, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.TokenRevoke(ctx, &store.TokenRevokeParams{Issuer: t.Issuer, JTI: t.ID, Subject: id.Subject,
			ExpiresAt: t.ExpiresAt, Now: now})
		if err != nil {
			return err
		}
		return s.audit.RecordWith(ctx, tx, audit.Entry{Action: "session.delete", TargetKind: "session", TargetName: id.Subject,
			Result: audit.Success, Details: details})
	})
	if err != nil {
		return err
	}
	if n, err := s.store.TokenRevocationPurge(ctx, now.Add(-revocationLeeway)); err != nil {
		s.log.WarnContext(ctx, "server: Purging expired token revocations failed", "err", err)
	} else if n > 0 {
		s.log.DebugContext(ctx, "server: Purged expired token revocations", "count", n)
	}
	s.log.InfoContext(telemetry.WithUserID(ctx, id.Subject), "server: Session signed out", "issuer", t.Issuer,
		"expiresAt", t.ExpiresAt.UTC())
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// streamSignedOut reports whether the token an event stream was opened with has been signed out
// since: the stream then ends, at most one heartbeat after the sign-out, and the client's
// reconnection is refused (401). A store that does not answer ends no stream here (the stream's
// own reads end it).
func (s *Server) streamSignedOut(ctx context.Context, deploymentID string) bool {
	id, ok := auth.IdentityFrom(ctx)
	if !ok || !errors.Is(s.refuseRevoked(ctx, id), errSignedOut) {
		return false
	}
	s.log.InfoContext(ctx, "server: Event stream ends: its token was signed out", "deploymentId", deploymentID)
	return true
}
