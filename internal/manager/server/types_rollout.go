package server

import (
	"encoding/json"
	"time"
)

// The JSON types of deployments, approvals and operator health (issue 12). The request body of
// POST /api/v1/deployments is request.Request (the design's JSON as it is); operator health is
// health.OperatorHealth (one cluster: health.ClusterOperatorHealth).

// Deployment is a deployment with the status of each of its clusters.
type Deployment struct {
	ID       string `json:"id"`
	Operator string `json:"operator"`
	Version  string `json:"version"`
	Strategy string `json:"strategy" description:"Canary, BlueGreen, Rolling or Direct"`
	// Config is the strategy's config object as the request gave it ({} when it gave none).
	Config              json.RawMessage `json:"config" description:"the strategy's config (canaryConfig, blueGreenConfig, rollingConfig or directConfig) as the request gave it"`
	Values              json.RawMessage `json:"values,omitempty" description:"the request's Helm values"`
	ValuesByEnvironment json.RawMessage `json:"valuesByEnvironment,omitempty" description:"the request's Helm values per environment"`
	BakeWindow          string          `json:"bakeWindow" description:"how long after it completes the deployment is still watched as its clusters' change (ISO 8601; PT0S: none): the request's bakeWindow, or the manager's --bake-window when it was requested"`
	Status              string          `json:"status" description:"Queued, WaitingApproval, Planning, Deploying, Validating, Completed, RollingBack, RolledBack, Failed or Cancelled"`
	Reason              string          `json:"reason,omitempty" description:"why the status is what it is"`
	RequestedBy         string          `json:"requestedBy"`
	RequestID           string          `json:"requestId,omitempty"`
	// Stage is the index of the strategy's stage being worked on.
	Stage             int        `json:"stage"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
	StartedAt         *time.Time `json:"startedAt,omitempty"`
	FinishedAt        *time.Time `json:"finishedAt,omitempty"`
	CancelRequested   bool       `json:"cancelRequested"`
	RollbackRequested bool       `json:"rollbackRequested"`
	SwitchRequested   bool       `json:"switchRequested"`
	RollbackReason    string     `json:"rollbackReason,omitempty"`
	// SwitchedAt and BlueDeleteAt are BlueGreen's: when green took over, and when blue (the
	// instant rollback target until then) is deleted.
	SwitchedAt   *time.Time `json:"switchedAt,omitempty"`
	BlueDeleteAt *time.Time `json:"blueDeleteAt,omitempty"`
	// Paused: POST /deployments/{id}/pause holds it (PausedBy, PausedAt, PauseReason) until
	// POST /deployments/{id}/resume; a finished deployment is never paused.
	Paused      bool                `json:"paused" description:"true between POST /pause and POST /resume: no new cluster step starts"`
	PausedAt    *time.Time          `json:"pausedAt,omitempty"`
	PausedBy    string              `json:"pausedBy,omitempty"`
	PauseReason string              `json:"pauseReason,omitempty"`
	Clusters    []DeploymentCluster `json:"clusters"`
	// StageStartedAt is when the current stage's hold began (absent while its clusters install);
	// Waiting what the deployment waits for (absent when nothing holds it), computed when answered.
	StageStartedAt *time.Time `json:"stageStartedAt,omitempty" description:"when the current stage's hold (evaluation or validation period) began"`
	Waiting        *Waiting   `json:"waiting,omitempty" description:"what the deployment waits for; absent when nothing holds it"`
	// AnalysisRuns are its analyses' runs, each with its measurements (GET /deployments/{id} only).
	AnalysisRuns []AnalysisRun `json:"analysisRuns,omitempty" description:"each analysis on each cluster and stage: phase and measurements (GET of one deployment only)"`
}

// DeploymentCluster is one target cluster's progress within a deployment.
type DeploymentCluster struct {
	Name        string `json:"name"`
	Environment string `json:"environment"`
	Stage       int    `json:"stage"`
	Status      string `json:"status" description:"pending, installing, validating, healthy, rolledBack, failed or skipped"`
	// HelmRevision is the release revision this deployment installed; PreviousRevision and
	// PreviousVersion what ran before (0 and "" for a first install): the rollback target.
	HelmRevision     int    `json:"helmRevision"`
	PreviousRevision int    `json:"previousRevision"`
	PreviousVersion  string `json:"previousVersion,omitempty"`
	Message          string `json:"message,omitempty"`
	Namespace        string `json:"namespace"`
	Release          string `json:"release"`
	// BlueNamespace and BlueRelease are the release live before a BlueGreen deployment.
	BlueNamespace   string    `json:"blueNamespace,omitempty"`
	BlueRelease     string    `json:"blueRelease,omitempty"`
	InstallAttempts int       `json:"installAttempts"`
	UpdatedAt       time.Time `json:"updatedAt"`
	// Waiting is why the cluster waits, for people ("evaluation period, 3 m 10 s left", "approval
	// by an Admin"); absent when it does not.
	Waiting string `json:"waiting,omitempty" description:"why the cluster waits (\"evaluation period, 3 m 10 s left\", \"approval by an Admin\"); absent when it does not"`
}

// DeploymentList is a page of deployments, newest first.
type DeploymentList struct {
	Items    []Deployment `json:"items"`
	Continue string       `json:"continue,omitempty"`
}

// PauseRequest is the optional body of POST /deployments/{id}/pause.
type PauseRequest struct {
	Reason string `json:"reason,omitempty"`
}

// RollbackRequest is the optional body of POST /deployments/{id}/rollback.
type RollbackRequest struct {
	Reason string `json:"reason,omitempty"`
}

// Rollback statuses (RollbackStatus.Status).
const (
	RollbackNotStarted = "notStarted"
	RollbackInProgress = "inProgress"
	RollbackRolledBack = "rolledBack"
	RollbackFailed     = "failed"
)

// RollbackStatus is GET /deployments/{id}/rollback-status.
type RollbackStatus struct {
	DeploymentID string     `json:"deploymentId"`
	Status       string     `json:"status" description:"notStarted, inProgress, rolledBack or failed"`
	Reason       string     `json:"reason,omitempty" description:"why the rollback started (a failed stage, failed health checks, who asked)"`
	StartedAt    *time.Time `json:"startedAt,omitempty"`
	FinishedAt   *time.Time `json:"finishedAt,omitempty"`
	// DurationSeconds is from start to finish (to now while in progress).
	DurationSeconds *float64          `json:"durationSeconds,omitempty" description:"from start to finish; to now while in progress"`
	Clusters        []RollbackCluster `json:"clusters"`
}

// RollbackCluster is one cluster of a rollback: from the deployment's version back to what the
// cluster ran before it.
type RollbackCluster struct {
	ClusterName string `json:"clusterName"`
	Status      string `json:"status"`
	FromVersion string `json:"fromVersion"`
	ToVersion   string `json:"toVersion" description:"the version the cluster ran before the deployment (empty for a first install)"`
	ToRevision  int    `json:"toRevision" description:"the Helm revision rolled back to (0 for a first install)"`
	Message     string `json:"message,omitempty"`
}

// DeploymentEvent is one step of a deployment's history.
type DeploymentEvent struct {
	ID           int64           `json:"id"`
	DeploymentID string          `json:"deploymentId"`
	Time         time.Time       `json:"time"`
	Type         string          `json:"type"`
	Cluster      string          `json:"cluster,omitempty"`
	Message      string          `json:"message"`
	Details      json.RawMessage `json:"details,omitempty" description:"the step's details (a JSON object)"`
}

// DeploymentEventList is a page of a deployment's events, oldest first.
type DeploymentEventList struct {
	Items    []DeploymentEvent `json:"items"`
	Continue string            `json:"continue,omitempty"`
}

// StreamEnd is the data of the event stream's last event ("end"): the deployment is terminal
// and every event of it was sent.
type StreamEnd struct {
	DeploymentID string `json:"deploymentId"`
	Status       string `json:"status"`
	Reason       string `json:"reason,omitempty"`
}

// DecisionRequest is the body of POST /approvals/{id}/approve and /reject (a reject needs a comment).
type DecisionRequest struct {
	Comment string `json:"comment,omitempty"`
}

// DeploymentApproval is a request for people to approve a deployment.
type DeploymentApproval struct {
	ID           string     `json:"id"`
	DeploymentID string     `json:"deploymentId"`
	Kind         string     `json:"kind" description:"versionUpgrade, breakingCRD or production"`
	RequiredRole string     `json:"requiredRole" description:"Admin, or EnvironmentOwner:Production (which Admin also satisfies)"`
	Required     int        `json:"required" description:"distinct approvers needed"`
	Approvals    int        `json:"approvals" description:"approvals given so far"`
	RequestedBy  string     `json:"requestedBy"`
	Status       string     `json:"status" description:"pending, approved, rejected or expired"`
	Reason       string     `json:"reason,omitempty"`
	ExpiresAt    time.Time  `json:"expiresAt"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
	NotifiedAt   *time.Time `json:"notifiedAt,omitempty"`
	Decisions    []Decision `json:"decisions"`
	// MigrationNotes are the migration notes of the CRD revisions the deployment moves its
	// clusters to, as planning found them.
	MigrationNotes []RevisionNote `json:"migrationNotes,omitempty"`
}

// Decision is one person's approve or reject.
type Decision struct {
	Actor    string    `json:"actor"`
	Decision string    `json:"decision" description:"approve or reject"`
	Comment  string    `json:"comment,omitempty"`
	Time     time.Time `json:"time"`
}

// ApprovalList is a page of approvals, newest first.
type ApprovalList struct {
	Items    []DeploymentApproval `json:"items"`
	Continue string               `json:"continue,omitempty"`
}
