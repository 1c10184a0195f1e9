package notifications

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/words"
)

// Event kinds: what a route selects.
const (
	KindOperatorUnhealthy         = "operator.unhealthy"
	KindOperatorRecovered         = "operator.recovered"
	KindDeploymentFailed          = "deployment.failed"
	KindDeploymentRolledBack      = "deployment.rolledBack"
	KindDeploymentWaitingApproval = "deployment.waitingApproval"
	KindDeploymentCompleted       = "deployment.completed"
	KindClusterUnreachable        = "cluster.unreachable"
	KindClusterRecovered          = "cluster.recovered"
	// KindTest is POST /api/v1/notifications/channels/{name}/test: to that channel only.
	KindTest = "test"
)

// Kinds are the event kinds a route may name.
var Kinds = []string{
	KindOperatorUnhealthy, KindOperatorRecovered,
	KindDeploymentFailed, KindDeploymentRolledBack, KindDeploymentWaitingApproval, KindDeploymentCompleted,
	KindClusterUnreachable, KindClusterRecovered,
}

// Severities of a payload.
const (
	SeverityError    = "error"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
	SeverityResolved = "resolved"
)

// Payload is what every channel is told: the webhook's JSON body as it is, and what the Slack
// message and the mail are made of. It never holds a secret.
type Payload struct {
	// DeliveryID is the delivery's stable id (also the X-Slipway-Delivery header): the same on
	// every attempt, different per channel. EventID is shared by the deliveries of one event.
	DeliveryID   string    `json:"deliveryId"`
	EventID      string    `json:"eventId"`
	Kind         string    `json:"kind"`
	Severity     string    `json:"severity"`
	Time         time.Time `json:"time"`
	Summary      string    `json:"summary"`
	Environments []string  `json:"environments"`
	// URL is the object in the manager's API, under --public-url (absent without it).
	URL        string          `json:"url,omitempty"`
	Deployment *DeploymentInfo `json:"deployment,omitempty"`
	Operator   *OperatorInfo   `json:"operator,omitempty"`
	Cluster    *ClusterInfo    `json:"cluster,omitempty"`
	Approvals  []ApprovalInfo  `json:"approvals,omitempty"`
}

// DeploymentInfo is a deployment as notifications tell it.
type DeploymentInfo struct {
	ID             string              `json:"id"`
	Operator       string              `json:"operator"`
	Version        string              `json:"version"`
	Strategy       string              `json:"strategy"`
	Status         string              `json:"status"`
	PreviousStatus string              `json:"previousStatus"`
	Reason         string              `json:"reason"`
	RequestedBy    string              `json:"requestedBy"`
	Clusters       []DeploymentCluster `json:"clusters"`
}

// DeploymentCluster is one target of a deployment.
type DeploymentCluster struct {
	Name        string `json:"name"`
	Environment string `json:"environment"`
	Status      string `json:"status"`
	Message     string `json:"message,omitempty"`
}

// OperatorInfo is an operator's health on one cluster.
type OperatorInfo struct {
	Name           string `json:"name"`
	Cluster        string `json:"cluster"`
	Environment    string `json:"environment,omitempty"`
	Health         string `json:"health"`
	PreviousHealth string `json:"previousHealth,omitempty"`
	Problems       string `json:"problems,omitempty"`
	// OnUnhealthy is what failed checks here lead to (operator.unhealthy): rollback (the
	// deployment runs, or is within its bake window) or alert (no automatic rollback, why in
	// AlertReason).
	OnUnhealthy         string    `json:"onUnhealthy,omitempty"`
	AlertReason         string    `json:"alertReason,omitempty"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	DeploymentID        string    `json:"deploymentId"`
	CheckedAt           time.Time `json:"checkedAt"`
}

// ClusterInfo is a cluster's health.
type ClusterInfo struct {
	Name           string     `json:"name"`
	Environment    string     `json:"environment"`
	Health         string     `json:"health"`
	PreviousHealth string     `json:"previousHealth,omitempty"`
	Reason         string     `json:"reason,omitempty"`
	CheckedAt      *time.Time `json:"checkedAt,omitempty"`
}

// ApprovalInfo is a pending approval of a deployment that waits for it.
type ApprovalInfo struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	RequiredRole string    `json:"requiredRole"`
	Required     int       `json:"required"`
	Reason       string    `json:"reason"`
	ExpiresAt    time.Time `json:"expiresAt"`
}

// Event is a notification to store: routed by Kind and Environments, or to Channel only.
type Event struct {
	Kind         string
	Subject      string
	Environments []store.Environment
	Payload      Payload
	// Channel, when set, is the one channel told, whatever the routes say (a test).
	Channel string
}

// severityOf is a kind's severity.
func severityOf(kind string) string {
	switch kind {
	case KindDeploymentFailed, KindOperatorUnhealthy, KindClusterUnreachable:
		return SeverityError
	case KindDeploymentRolledBack:
		return SeverityWarning
	case KindOperatorRecovered, KindClusterRecovered:
		return SeverityResolved
	}
	return SeverityInfo
}

// deploymentKinds are the deployment statuses people are told about.
var deploymentKinds = map[store.DeploymentStatus]string{
	store.DeploymentFailed:          KindDeploymentFailed,
	store.DeploymentRolledBack:      KindDeploymentRolledBack,
	store.DeploymentWaitingApproval: KindDeploymentWaitingApproval,
	store.DeploymentCompleted:       KindDeploymentCompleted,
}

// deploymentEvent is the event of d having moved from from to its status ("" kind: none).
func deploymentEvent(from store.DeploymentStatus, d *store.Deployment) Event {
	kind := deploymentKinds[d.Status]
	if kind == "" {
		return Event{}
	}
	info := &DeploymentInfo{ID: d.ID, Operator: d.OperatorName, Version: d.Version, Strategy: d.Strategy,
		Status: string(d.Status), PreviousStatus: string(from), Reason: d.Reason, RequestedBy: d.RequestedBy,
		Clusters: []DeploymentCluster{}}
	var envs []store.Environment
	for _, c := range d.Clusters {
		info.Clusters = append(info.Clusters, DeploymentCluster{Name: c.ClusterName, Environment: string(c.Environment),
			Status: string(c.Status), Message: c.Message})
		envs = append(envs, c.Environment)
	}
	what := fmt.Sprintf("%s %s", d.OperatorName, d.Version)
	var summary string
	switch d.Status {
	case store.DeploymentFailed:
		summary = fmt.Sprintf("%s failed: %s", what, d.Reason)
	case store.DeploymentRolledBack:
		summary = fmt.Sprintf("%s rolled back: %s", what, d.Reason)
	case store.DeploymentWaitingApproval:
		summary = fmt.Sprintf("%s waits for approval (%s, requested by %s): %s", what, d.Strategy, d.RequestedBy, d.Reason)
	default:
		summary = fmt.Sprintf("%s completed on %s (%s)", what, words.Count(len(d.Clusters), "cluster"), d.Strategy)
	}
	return Event{Kind: kind, Subject: "deployment/" + d.ID, Environments: envs,
		Payload: Payload{Summary: summary, Deployment: info}}
}

// inOrder sorts environments in promotion order without repeats, known ones first.
func inOrder(envs []store.Environment) []store.Environment {
	out := slices.Clone(envs)
	rank := func(e store.Environment) int {
		if i := slices.Index(store.Environments, e); i >= 0 {
			return i
		}
		return len(store.Environments)
	}
	slices.SortFunc(out, func(a, b store.Environment) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(string(a), string(b))
	})
	return slices.Compact(out)
}

// place is a cluster as summaries name it: "prod-eu (Production)".
func place(cluster string, env store.Environment) string {
	if env == "" {
		return cluster
	}
	return fmt.Sprintf("%s (%s)", cluster, env)
}
