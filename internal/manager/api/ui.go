package api

import (
	"encoding/json"
	"time"
)

// The web UI's: who signs in and how, the fleet grid and CRD schema diffs.

// Whoami is GET /api/v1/whoami.
type Whoami struct {
	Subject string   `json:"subject"`
	Roles   []string `json:"roles" description:"Admin, Operator, Viewer, EnvironmentOwner"`
	// Environments are those the caller owns (EnvironmentOwner).
	Environments []string `json:"environments" description:"the environments the caller is EnvironmentOwner of"`
}

// UIOIDC is how the UI signs in with OIDC.
type UIOIDC struct {
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"clientId"`
	Scopes   []string `json:"scopes"`
}

// UIConfigResponse is GET /api/v1/ui/config.
type UIConfigResponse struct {
	OIDC *UIOIDC `json:"oidc,omitempty" description:"absent when no OIDC issuer and client id are configured for the UI"`
	// SessionExchange: POST /api/v1/session exchanges sign-in links (the manager has an HS256 secret).
	SessionExchange bool `json:"sessionExchange"`
}

// SessionRequest is the body of POST /api/v1/session.
type SessionRequest struct {
	Ticket string `json:"ticket" description:"the ticket of a sign-in link (the part after #ticket=)"`
}

// SessionResponse is a session token for the ticket's subject and roles.
type SessionResponse struct {
	Token     string    `json:"token" description:"a Bearer token (HS256) for the API"`
	Subject   string    `json:"subject"`
	Roles     []string  `json:"roles"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// FleetOperator is an operator in the fleet view.
type FleetOperator struct {
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace"`
	LatestVersion string   `json:"latestVersion,omitempty" description:"the newest version that can be deployed"`
	Versions      []string `json:"versions" description:"the versions that can be deployed, newest first"`
}

// FleetCluster is a cluster in the fleet view.
type FleetCluster struct {
	Name              string     `json:"name"`
	Environment       string     `json:"environment"`
	Health            string     `json:"health" description:"the cluster's own health: Unknown, Healthy or Unhealthy"`
	HealthReason      string     `json:"healthReason,omitempty"`
	KubernetesVersion string     `json:"kubernetesVersion"`
	LastChecked       *time.Time `json:"lastChecked,omitempty"`
}

// FleetCell is one operator on one cluster: the version the manager deployed there and its health.
type FleetCell struct {
	Operator      string     `json:"operator"`
	Cluster       string     `json:"cluster"`
	Environment   string     `json:"environment"`
	Version       string     `json:"version"`
	LatestVersion string     `json:"latestVersion"`
	Drift         string     `json:"drift" enum:"current,behind" description:"behind: an older version than the operator's latest runs here"`
	Health        string     `json:"health" enum:"Healthy,Degraded,Unhealthy,Unknown" description:"the operator's last health check here; Unknown before the first"`
	HealthReason  string     `json:"healthReason,omitempty" description:"what is not healthy (the parts of the check that failed)"`
	DeploymentID  string     `json:"deploymentId" description:"the deployment that put this version here"`
	HelmRevision  int        `json:"helmRevision"`
	CheckedAt     *time.Time `json:"checkedAt,omitempty"`
	// OnUnhealthy is what failed checks here do now: roll the deployment back (while it is in its
	// bake window, until RollbackUntil) or alert only (why in AlertReason).
	OnUnhealthy   string     `json:"onUnhealthy" enum:"rollback,alert" description:"what failed health checks here do now: rollback (the deployment is within its bake window) or alert (operator.unhealthy, no rollback)"`
	RollbackUntil *time.Time `json:"rollbackUntil,omitempty" description:"the end of the deployment's bake window: until then failed checks roll it back"`
	AlertReason   string     `json:"alertReason,omitempty" description:"why failed checks here are an alert, not a rollback"`
}

// Fleet is GET /api/v1/fleet: operators × clusters.
type Fleet struct {
	Operators []FleetOperator `json:"operators"`
	// Clusters are ordered by environment (Dev, Staging, Production), then name.
	Clusters []FleetCluster `json:"clusters"`
	// Cells exist only where an operator runs on a cluster, ordered like operators, then clusters.
	Cells []FleetCell `json:"cells"`
}

// CRDRevisionDefinition is GET /api/v1/crds/{name}/revisions/{version}.
type CRDRevisionDefinition struct {
	CRD      string      `json:"crd"`
	Revision CRDRevision `json:"revision" description:"the revision; its version is the one asked for"`
	// Definition is the CustomResourceDefinition as stored.
	Definition json.RawMessage `json:"definition" description:"the CustomResourceDefinition as stored (a JSON object)"`
}

// CRDDiff is GET /api/v1/crds/{name}/diff.
type CRDDiff struct {
	CRD  string      `json:"crd"`
	From CRDRevision `json:"from"`
	To   CRDRevision `json:"to"`
	// Identical: both versions ship the same revision (no changes).
	Identical bool           `json:"identical"`
	Breaking  bool           `json:"breaking"`
	Changes   []SchemaChange `json:"changes"`
}
