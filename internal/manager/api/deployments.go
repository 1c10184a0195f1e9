package api

import (
	"encoding/json"
	"time"
)

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

// Waiting reasons.
const (
	WaitEvaluation = "evaluationPeriod"
	WaitPause      = "pauseBetweenClusters"
	WaitApproval   = "approval"
	WaitPaused     = "paused"
	WaitSwitch     = "switch"
	WaitQueued     = "queued"
)

// Waiting is what a deployment waits for.
type Waiting struct {
	Reason  string     `json:"reason" enum:"evaluationPeriod,pauseBetweenClusters,approval,paused,switch,queued"`
	Message string     `json:"message" description:"for people: \"evaluation period, 3 m 10 s left\", \"approval by an Admin\", \"paused by alice\""`
	Until   *time.Time `json:"until,omitempty" description:"when the wait ends (a hold or pause); for an approval, when it expires"`
	Role    string     `json:"role,omitempty" description:"the role an approval needs (Admin, EnvironmentOwner:Production)"`
}

// DryRun is the answer of POST /api/v1/deployments?dryRun=true: what the request would do,
// from the same validation (prepare) and the same planning (assess) as a real one, with nothing
// stored and nothing changed in any cluster.
type DryRun struct {
	DryRun   bool            `json:"dryRun" description:"always true: nothing was stored"`
	Operator string          `json:"operator"`
	Version  string          `json:"version"`
	Strategy string          `json:"strategy"`
	Config   json.RawMessage `json:"config" description:"the strategy's config as the request gave it"`
	// BakeWindow is the deployment's bake window (ISO 8601): the request's bakeWindow, or the
	// manager's --bake-window.
	BakeWindow string `json:"bakeWindow" description:"how long after it completes the deployment is still watched as its clusters' change (ISO 8601; PT0S: none): the request's bakeWindow, or the manager's --bake-window"`
	// Stages are the plan's stages, in order, each with its clusters.
	Stages []DryRunStage `json:"stages"`
	// Clusters are the targets with what planning finds on each.
	Clusters []DryRunCluster `json:"clusters"`
	// AlreadyRunning names the targets that run the requested version now.
	AlreadyRunning []string `json:"alreadyRunning" description:"targets that run the requested version now"`
	// Approvals are the approvals the deployment would ask for (none when planning would fail).
	Approvals []DryRunApproval `json:"approvals"`
	// WouldFail is the reason planning would fail the deployment with, before installing
	// anything ("" when it would go on).
	WouldFail string `json:"wouldFail,omitempty" description:"planning would fail the deployment with this reason; empty when it would go on"`
	// Events are the events planning would record (crd.breaking, crd.approved, ...).
	Events []DryRunEvent `json:"events"`
}

// DryRunStage is one stage of the plan.
type DryRunStage struct {
	Index       int      `json:"index"`
	Kind        string   `json:"kind" description:"install, or switch (BlueGreen)"`
	Environment string   `json:"environment,omitempty"`
	Clusters    []string `json:"clusters"`
	Parallel    int      `json:"parallel" description:"clusters worked on at once"`
	Percentage  float64  `json:"percentage" description:"share of the deployment's clusters done once this stage is"`
	// Hold and PauseAfter are ISO 8601 durations.
	Hold             string  `json:"hold" description:"how long the stage is watched before it is judged (ISO 8601)"`
	SuccessThreshold float64 `json:"successThreshold" description:"fraction of the stage's clusters that must be healthy"`
	HealthChecks     bool    `json:"healthChecks"`
	PauseAfter       string  `json:"pauseAfter,omitempty" description:"wait before the next stage (ISO 8601)"`
	WaitForSwitch    bool    `json:"waitForSwitch,omitempty" description:"the switch waits for POST /deployments/{id}/switch"`
}

// DryRunCluster is one target as planning finds it.
type DryRunCluster struct {
	Name          string `json:"name"`
	Environment   string `json:"environment"`
	Stage         int    `json:"stage"`
	Namespace     string `json:"namespace"`
	Release       string `json:"release"`
	BlueNamespace string `json:"blueNamespace,omitempty"`
	BlueRelease   string `json:"blueRelease,omitempty"`
	// InstalledVersion is the version the manager deployed there and that runs now ("" none).
	InstalledVersion string `json:"installedVersion,omitempty"`
	RunsVersion      bool   `json:"runsVersion" description:"the cluster runs the requested version now"`
	// Problem is why planning refuses the cluster ("" when it does not).
	Problem string `json:"problem,omitempty"`
	// CRDs compares each of the chart's CRDs with the one the cluster stores (not checked when
	// the cluster has a problem).
	CRDs []DryRunCRD `json:"crds"`
}

// DryRunCRD is one of the chart's CRDs against what a cluster stores.
type DryRunCRD struct {
	Name     string         `json:"name"`
	Status   string         `json:"status" enum:"new,unchanged,compatible,breaking" description:"new: the cluster has no such CRD; breaking: a change refuses objects the old definition accepted"`
	Approved bool           `json:"approved,omitempty" description:"the breaking change was approved through POST /crds/{name}/approve"`
	Changes  []SchemaChange `json:"changes"`
}

// DryRunApproval is an approval the deployment would ask for.
type DryRunApproval struct {
	Kind         string `json:"kind"`
	RequiredRole string `json:"requiredRole"`
	Required     int    `json:"required"`
	Reason       string `json:"reason"`
}

// DryRunEvent is an event planning would record.
type DryRunEvent struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster,omitempty"`
	Message string `json:"message"`
}

// The values of Deployment.Status, in lifecycle order: Queued (over the concurrency limit) or
// WaitingApproval before Planning; Planning → Deploying → Validating → Completed; RollingBack →
// RolledBack or Failed; Failed; Cancelled (DELETE /deployments/{id}). The store keeps the same
// words (store.DeploymentStatus; a server test checks that both lists agree).
const (
	DeploymentQueued          = "Queued"
	DeploymentWaitingApproval = "WaitingApproval"
	DeploymentPlanning        = "Planning"
	DeploymentDeploying       = "Deploying"
	DeploymentValidating      = "Validating"
	DeploymentCompleted       = "Completed"
	DeploymentRollingBack     = "RollingBack"
	DeploymentRolledBack      = "RolledBack"
	DeploymentFailed          = "Failed"
	DeploymentCancelled       = "Cancelled"
)

// DeploymentStatuses are every deployment status, in lifecycle order.
var DeploymentStatuses = []string{
	DeploymentQueued, DeploymentWaitingApproval, DeploymentPlanning, DeploymentDeploying,
	DeploymentValidating, DeploymentCompleted, DeploymentRollingBack, DeploymentRolledBack,
	DeploymentFailed, DeploymentCancelled,
}

// Environments are a cluster's environments, in promotion order (Cluster.Environment).
var Environments = []string{"Dev", "Staging", "Production"}
