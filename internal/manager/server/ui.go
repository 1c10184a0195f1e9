package server

import (
	"net/http"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
)

// The web UI's routes (issue 20): who the caller is, how the UI signs in, and the exchange of a
// one-time sign-in link for a session token (session.go).

// UIConfig is how the web UI signs people in.
type UIConfig struct {
	// OIDCIssuer and OIDCClientID: the UI signs in with the authorization-code flow and PKCE at
	// this issuer as this (public) client, and sends the ID token it gets as its Bearer token.
	// Both empty: the UI offers no OIDC sign-in.
	OIDCIssuer   string
	OIDCClientID string
	// OIDCScopes are the scopes it asks for (DefaultUIScopes when empty).
	OIDCScopes []string
	// SessionTTL is how long a session token from POST /api/v1/session lasts.
	SessionTTL time.Duration
}

// UI defaults.
var DefaultUIScopes = []string{"openid", "profile", "email"}

const DefaultSessionTTL = 12 * time.Hour

// sessionRoute is the public route limited per client address (clientRules).
const sessionRoute = "POST /api/v1/session"

// DefaultSessionRule limits sign-in link exchanges per client address.
var DefaultSessionRule = ratelimit.Rule{Events: 10, Per: time.Minute}

// clientRules are the per-client-address limits of the public routes: DefaultSessionRule unless
// the configured rules (--rate-limits) name the route.
func clientRules(rules map[string]ratelimit.Rule) map[string]ratelimit.Rule {
	r, ok := rules[sessionRoute]
	if !ok {
		r = DefaultSessionRule
	}
	return map[string]ratelimit.Rule{sessionRoute: r}
}

func (s *Server) getWhoami(w http.ResponseWriter, r *http.Request) error {
	id, _ := auth.IdentityFrom(r.Context())
	out := api.Whoami{Subject: id.Subject, Roles: make([]string, 0, len(id.Roles)), Environments: slices.Clone(id.Environments)}
	for _, role := range id.Roles {
		out.Roles = append(out.Roles, string(role))
	}
	if out.Environments == nil {
		out.Environments = []string{}
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) getUIConfig(w http.ResponseWriter, r *http.Request) error {
	out := api.UIConfigResponse{SessionExchange: len(s.sessionSecret) > 0}
	if c := s.cfg.UI; c.OIDCIssuer != "" && c.OIDCClientID != "" {
		out.OIDC = &api.UIOIDC{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, Scopes: c.OIDCScopes}
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}
