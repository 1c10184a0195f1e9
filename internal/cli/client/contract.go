package client

// The answers of routes the manager gained for the cockpit (GET /api/v1/whoami, GET
// /api/v1/ui/config), in the shapes the API documents.

// WhoAmI is GET /api/v1/whoami: the token's subject, roles and (EnvironmentOwner) environments.
type WhoAmI struct {
	Subject      string   `json:"subject"`
	Roles        []string `json:"roles"`
	Environments []string `json:"environments"`
}

// UIConfig is GET /api/v1/ui/config (public): the OIDC issuer the manager trusts, when one is
// configured, and whether one-time sign-in tickets can be exchanged.
type UIConfig struct {
	OIDC            *OIDCConfig `json:"oidc,omitempty"`
	SessionExchange bool        `json:"sessionExchange"`
}

// OIDCConfig is the issuer and the public client to sign in with.
type OIDCConfig struct {
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"clientId"`
	Scopes   []string `json:"scopes,omitempty"`
}
