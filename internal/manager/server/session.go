package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Sign-in tickets: `manager login-link` (and make dev) mint a one-time ticket, the UI's /login
// page reads it from the link's fragment (which never reaches a server or its logs) and posts it
// to POST /api/v1/session, which records its id once (store.LoginTicketExecutor) and answers a
// session token minted like `manager token`'s.
//
// A ticket is an HS256 JWT, but never an access token, nor an access token a ticket:
//   - it is signed with a key derived from the manager's secret (ticketKey), not the secret
//     itself, so the token verifier's signature check refuses it, and the exchange refuses a token
//     signed with the secret;
//   - it carries the claim token_use=login_ticket (and aud slipway-login), which the exchange
//     requires and authenticate refuses in any Bearer token before it is verified.
const (
	ticketUseClaim = "token_use"
	ticketUse      = "login_ticket"
	ticketAudience = "slipway-login"
	// ticketLeeway is the clock skew allowed on a ticket's exp, nbf and iat.
	ticketLeeway = 30 * time.Second
	// MaxTicketTTL bounds a ticket's lifetime: a sign-in link is for now, not for later.
	MaxTicketTTL = 24 * time.Hour
	// maxTicketBytes bounds what is parsed at all.
	maxTicketBytes = 16 << 10
)

// ticketKey is the key tickets are signed with: HMAC-SHA256 of a fixed label under the secret.
func ticketKey(secret []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("slipway-manager sign-in ticket v1"))
	return mac.Sum(nil)
}

// MintLoginTicket signs a one-time sign-in ticket for subject with roles (canonical, as
// auth.ParseRole returns them), valid from now for ttl (at most MaxTicketTTL), for
// `manager login-link`. secret is the manager's HS256 secret.
func MintLoginTicket(secret []byte, subject string, roles []auth.Role, ttl time.Duration, now time.Time) (string, error) {
	switch {
	case len(secret) < auth.MinSecretBytes:
		return "", fmt.Errorf("the HS256 secret is %d bytes; it must be at least %d", len(secret), auth.MinSecretBytes)
	case strings.TrimSpace(subject) == "":
		return "", errors.New("the ticket's subject is empty")
	case ttl <= 0 || ttl > MaxTicketTTL:
		return "", fmt.Errorf("a ticket's lifetime must be positive and at most %s, not %s", MaxTicketTTL, ttl)
	case len(roles) == 0:
		return "", errors.New("the ticket has no role")
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		canon, err := auth.ParseRole(string(r))
		if err != nil {
			return "", err
		}
		names[i] = string(canon)
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", err
	}
	claims := jwt.MapClaims{
		"iss": auth.MintIssuer, "aud": ticketAudience, ticketUseClaim: ticketUse,
		"sub": subject, "jti": base64.RawURLEncoding.EncodeToString(id), auth.DefaultRoleClaim: names,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(ttl).Unix(),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(ticketKey(secret))
}

// loginTicket is a verified ticket (or, with errTicketExpired, one whose signature held).
type loginTicket struct {
	jti, subject string
	roles        []auth.Role
	expiresAt    time.Time
}

func ticketRefused(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthenticated, Message: msg}
}

var (
	errTicketUsed    = ticketRefused("this sign-in link was used already: a link signs in once; ask for a new one (manager login-link)")
	errTicketInvalid = func(why string) *Error {
		return ticketRefused("this sign-in link is not valid (" + why + "): ask for a new one (manager login-link)")
	}
)

// parseLoginTicket checks raw against secret at now. An expired ticket whose signature holds is
// returned with its refusal, so the refusal can be audited under its subject.
func parseLoginTicket(secret []byte, raw string, now time.Time) (*loginTicket, error) {
	if len(raw) > maxTicketBytes {
		return nil, errTicketInvalid("too large")
	}
	claims := jwt.MapClaims{}
	p := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(ticketLeeway), jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithAudience(ticketAudience), jwt.WithIssuer(auth.MintIssuer))
	_, err := p.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return ticketKey(secret), nil })
	expired := errors.Is(err, jwt.ErrTokenExpired)
	switch {
	case err != nil && !expired && (errors.Is(err, jwt.ErrTokenMalformed) || errors.Is(err, jwt.ErrTokenUnverifiable)):
		return nil, errTicketInvalid("malformed")
	case err != nil && !expired && errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return nil, errTicketInvalid("its signature does not match this manager's secret")
	case err != nil && !expired:
		return nil, errTicketInvalid("its claims are not a sign-in ticket's")
	}
	t, terr := ticketClaims(claims)
	if terr != nil {
		return nil, terr
	}
	if expired {
		return t, ticketRefused(fmt.Sprintf("this sign-in link expired at %s: ask for a new one (manager login-link)",
			t.expiresAt.UTC().Format(time.RFC3339)))
	}
	return t, nil
}

// ticketClaims reads a signed ticket's claims; a token without the ticket claim is refused.
func ticketClaims(claims jwt.MapClaims) (*loginTicket, error) {
	if use, _ := claims[ticketUseClaim].(string); use != ticketUse {
		return nil, errTicketInvalid("not a sign-in ticket")
	}
	t := &loginTicket{}
	t.subject, _ = claims["sub"].(string)
	t.jti, _ = claims["jti"].(string)
	exp, err := claims.GetExpirationTime()
	if strings.TrimSpace(t.subject) == "" || t.jti == "" || err != nil || exp == nil {
		return nil, errTicketInvalid("no subject, id or expiry")
	}
	t.expiresAt = exp.Time
	list, _ := claims[auth.DefaultRoleClaim].([]any)
	for _, v := range list {
		s, _ := v.(string)
		r, err := auth.ParseRole(s)
		if err != nil {
			return nil, errTicketInvalid("unknown role")
		}
		t.roles = append(t.roles, r)
	}
	if len(t.roles) == 0 {
		return nil, errTicketInvalid("no role")
	}
	return t, nil
}

// isLoginTicket reports whether raw's payload (not verified: this only refuses) is a ticket's.
func isLoginTicket(raw string) bool {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var c struct {
		Use any `json:"token_use"`
	}
	if json.Unmarshal(b, &c) != nil {
		return false
	}
	return c.Use == ticketUse
}

// errTicketAsBearer refuses a ticket sent as an access token.
var errTicketAsBearer = &auth.TokenError{Reason: "a sign-in ticket is not an access token: exchange it once at POST /api/v1/session"}

// createSession exchanges a sign-in ticket, once, for a session token.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	if len(s.sessionSecret) == 0 {
		return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "sign-in links are off on this manager: it has no " +
			"HS256 secret (--jwt-secret-file or $SLIPWAY_MANAGER_JWT_SECRET); sign in with OIDC or paste a token"}
	}
	var req api.SessionRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Ticket == "" {
		return errInvalid("ticket", "required: the ticket of a sign-in link (the part after #ticket=)")
	}
	ctx, now := r.Context(), s.now()
	t, err := parseLoginTicket(s.sessionSecret, req.Ticket, now)
	if t != nil {
		ctx = auth.WithIdentity(ctx, &auth.Identity{Subject: t.subject, Roles: t.roles})
	}
	if err != nil {
		s.refuseTicket(ctx, t, err)
		return err
	}
	out, err := s.exchange(ctx, t, now)
	if errors.Is(err, store.ErrAlreadyExists) {
		s.refuseTicket(ctx, t, errTicketUsed)
		return errTicketUsed
	}
	if err != nil {
		return err
	}
	if n, err := s.store.LoginTicketPurge(ctx, now.Add(-2*ticketLeeway)); err != nil {
		s.log.WarnContext(ctx, "server: Purging expired sign-in tickets failed", "err", err)
	} else if n > 0 {
		s.log.DebugContext(ctx, "server: Purged expired sign-in tickets", "count", n)
	}
	s.log.InfoContext(telemetry.WithUserID(ctx, t.subject), "server: Session created from a sign-in link", "expiresAt", out.ExpiresAt)
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

// exchange records the ticket's use and the audit record in one transaction, and mints the token.
func (s *Server) exchange(ctx context.Context, t *loginTicket, now time.Time) (*api.SessionResponse, error) {
	ttl := s.cfg.UI.SessionTTL
	minted, err := auth.MintToken(s.sessionSecret, t.subject, t.roles, ttl, now)
	if err != nil {
		return nil, err
	}
	out := &api.SessionResponse{Token: minted.Token, Subject: t.subject, Roles: make([]string, len(t.roles)), ExpiresAt: minted.ExpiresAt}
	for i, r := range t.roles {
		out.Roles[i] = string(r)
	}
	err = store.WithTx(ctx, s.store, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.LoginTicketUse(ctx, &store.LoginTicketUseParams{JTI: t.jti, Subject: t.subject, ExpiresAt: t.expiresAt, Now: now}); err != nil {
			return err
		}
		return s.audit.RecordWith(ctx, tx, audit.Entry{Action: "session.create", TargetKind: "session", TargetName: t.subject,
			Result: audit.Success, Details: map[string]any{"roles": out.Roles, "expiresAt": out.ExpiresAt, "ticket": t.jti,
				"session": minted.ID}})
	})
	return out, err
}

// refuseTicket records a refused exchange: in the audit log when the ticket's signature held (its
// subject is known: a used or expired link), else only in the log (anyone can post garbage).
func (s *Server) refuseTicket(ctx context.Context, t *loginTicket, err error) {
	msg := toError(err).Message
	if t == nil {
		s.log.InfoContext(ctx, "server: Sign-in ticket refused", "reason", msg)
		return
	}
	s.audit.Record(ctx, audit.Entry{Action: "session.create", TargetKind: "session", TargetName: t.subject, Result: audit.Denied,
		Details: map[string]any{"refused": msg, "ticket": t.jti}})
}

// limitClient applies the public route's per-client-address limit (the host of RemoteAddr: put
// the manager behind a proxy that keeps it, or raise the limit with --rate-limits).
func (s *Server) limitClient(r *http.Request, rt route) error {
	label := rt.Method + " " + rt.Pattern
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ok, retry := s.clientLimiter.Allow("client:"+host, label)
	if ok {
		return nil
	}
	telemetry.RateLimited(rt.Pattern)
	secs := int((retry + time.Second - 1) / time.Second)
	return &Error{Status: http.StatusTooManyRequests, Code: api.CodeRateLimited, RetryAfter: secs,
		Message: fmt.Sprintf("rate limit for %s from %s exceeded: retry in %d s", label, host, secs),
		Details: map[string]any{"retryAfterSeconds": secs}}
}
