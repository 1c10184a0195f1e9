package client

import (
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// The answers of the routes the manager gained for the cockpit, under the names the CLI uses.

// WhoAmI is GET /api/v1/whoami: the token's subject, roles and (EnvironmentOwner) environments.
type WhoAmI = api.Whoami

// UIConfig is GET /api/v1/ui/config (public): the OIDC issuer and client the manager's sign-in
// uses, when one is configured, and whether one-time sign-in tickets can be exchanged.
type UIConfig = api.UIConfigResponse
