package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// The rollout engine's records (issue 12): deployments, the status of each target cluster, the
// step history, and approvals. RolloutExecutor is part of Executor: on the pool and in a Tx.

// ErrConflict: a state transition lost a race (the row moved on since it was read), or a unique
// rule of the rollout refused it, such as a second active deployment of one operator to one
// cluster. Callers re-read and decide.
var ErrConflict = errors.New("conflict")

// DeploymentStatus is a deployment's lifecycle: Queued (over the concurrency limit) or
// WaitingApproval before Planning; Planning → Deploying → Validating → Completed; RollingBack →
// RolledBack or Failed; Failed; Cancelled (DELETE /deployments/{id}).
type DeploymentStatus string

const (
	DeploymentQueued          DeploymentStatus = "Queued"
	DeploymentWaitingApproval DeploymentStatus = "WaitingApproval"
	DeploymentPlanning        DeploymentStatus = "Planning"
	DeploymentDeploying       DeploymentStatus = "Deploying"
	DeploymentValidating      DeploymentStatus = "Validating"
	DeploymentCompleted       DeploymentStatus = "Completed"
	DeploymentRollingBack     DeploymentStatus = "RollingBack"
	DeploymentRolledBack      DeploymentStatus = "RolledBack"
	DeploymentFailed          DeploymentStatus = "Failed"
	DeploymentCancelled       DeploymentStatus = "Cancelled"
)

// DeploymentStatuses are every deployment status, in lifecycle order.
var DeploymentStatuses = []DeploymentStatus{
	DeploymentQueued, DeploymentWaitingApproval, DeploymentPlanning, DeploymentDeploying,
	DeploymentValidating, DeploymentCompleted, DeploymentRollingBack, DeploymentRolledBack,
	DeploymentFailed, DeploymentCancelled,
}

// Terminal reports whether no step follows s.
func (s DeploymentStatus) Terminal() bool {
	switch s {
	case DeploymentCompleted, DeploymentRolledBack, DeploymentFailed, DeploymentCancelled:
		return true
	}
	return false
}

// ClusterStatus is one target cluster's progress within a deployment.
type ClusterStatus string

const (
	ClusterPending    ClusterStatus = "pending"
	ClusterInstalling ClusterStatus = "installing"
	ClusterValidating ClusterStatus = "validating"
	ClusterHealthy    ClusterStatus = "healthy"
	ClusterRolledBack ClusterStatus = "rolledBack"
	ClusterFailed     ClusterStatus = "failed"
	ClusterSkipped    ClusterStatus = "skipped"
)

// Deployment is one rollout of an operator version to clusters with a strategy.
type Deployment struct {
	ID                  string
	OperatorID          string
	OperatorName        string
	Version             string
	Strategy            string          // Canary, BlueGreen, Rolling, Direct
	Config              json.RawMessage // the strategy's config object, as the request gave it
	Values              json.RawMessage // Helm values (an object), and per environment: ValuesByEnvironment
	ValuesByEnvironment json.RawMessage
	Status              DeploymentStatus
	Reason              string // why the status is what it is (a failed check, a rejection), for people
	RequestedBy         string
	RequestID           string
	// Analyses are the deployment's analyses as it was created with them (a JSON array,
	// request.Spec.Analyses; nil for none); written once, by DeploymentCreate.
	Analyses json.RawMessage
	// Revision counts the row's updates: DeploymentUpdate's optimistic check.
	Revision   int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	Clusters   []*DeploymentCluster

	// The engine's bookkeeping (migration 00003), written by DeploymentUpdate like the rest.

	// Stage is the index of the plan stage being worked on; StageStartedAt is when its hold
	// began (nil while its clusters are still being installed).
	Stage          int
	StageStartedAt *time.Time
	// NextRunAt is when the engine looks at the deployment again; nil: nothing left to do.
	NextRunAt *time.Time
	// ClaimedBy is the replica working on a step, LeaseUntil when its claim lapses (it renews it
	// while working; another replica takes a lapsed claim over).
	ClaimedBy  string
	LeaseUntil *time.Time
	// Requests from the API that the engine honours at its next step.
	CancelRequested   bool
	RollbackRequested bool
	SwitchRequested   bool // BlueGreen with autoSwitch false: POST /deployments/{id}/switch
	// RollbackReason says why a rollback started (a failed stage, 3 failed health checks, who
	// asked); RollbackStartedAt when; RollbackFinishedAt when it ended (RolledBack or Failed).
	RollbackReason     string
	RollbackStartedAt  *time.Time
	RollbackFinishedAt *time.Time
	// BlueGreen: when traffic was switched to green, and when blue is deleted (the instant
	// rollback target until then); BlueDeleted once it is.
	SwitchedAt   *time.Time
	BlueDeleteAt *time.Time
	BlueDeleted  bool

	// TraceContext is the W3C trace context of the request that created the deployment
	// (migration 00004; telemetry.TraceContext): every step's span is its child, so a deployment
	// is one trace. Empty when the request had none.
	TraceContext string

	// PausedAt is when POST /deployments/{id}/pause paused the deployment (nil: not paused), PausedBy
	// who, PauseReason why (migration 00008): no replica starts a new cluster step until it is
	// resumed. DeploymentUpdate clears them when the deployment ends.
	PausedAt    *time.Time
	PausedBy    string
	PauseReason string

	// BakeWindow is how long after the deployment completes it is still watched as its own
	// (migration 00015): the request's bakeWindow, else the manager's --bake-window when it was
	// requested; 0 is none. Stored in milliseconds; rows older than the migration have 15 minutes.
	BakeWindow time.Duration
}

// DeploymentCluster is one target cluster of a deployment. Active rows (not terminal for the
// deployment) hold the (operator, cluster) pair: a partial unique index allows one per pair.
type DeploymentCluster struct {
	DeploymentID string
	ClusterName  string
	Environment  Environment
	Stage        int // the strategy's stage (canary step, rolling position, direct batch)
	Status       ClusterStatus
	// HelmRevision is the release revision this deployment installed; PreviousRevision and
	// PreviousVersion what was there before (0 and "" for a first install): the rollback target.
	HelmRevision     int
	PreviousRevision int
	PreviousVersion  string
	Message          string
	Active           bool
	UpdatedAt        time.Time
	// Namespace and Release locate this deployment's Helm release in the cluster (set when
	// planned; BlueGreen's green differs from the live one). BlueNamespace and BlueRelease are
	// the release that was live before a BlueGreen deployment (the switch's other side).
	Namespace     string
	Release       string
	BlueNamespace string
	BlueRelease   string
	// InstallAttempts counts the install calls made for this cluster (a replica that died
	// mid-install leaves 1 and its successor makes 2).
	InstallAttempts int
}

// DeploymentEvent is one step of a deployment's history (GET /deployments/{id}/events).
type DeploymentEvent struct {
	ID           int64
	DeploymentID string
	At           time.Time
	Type         string // e.g. "status", "cluster.installing", "cluster.healthy", "healthcheck.failed"
	Cluster      string
	Message      string
	Details      json.RawMessage
}

// ApprovalStatus is an approval request's state.
type ApprovalStatus string

const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	ApprovalExpired  ApprovalStatus = "expired"
)

// Approval is a request for people to approve a deployment (or a part of one).
type Approval struct {
	ID           string
	DeploymentID string
	Kind         string // "versionUpgrade", "breakingCRD", "production"
	RequiredRole string // "Admin", or "EnvironmentOwner:Production"
	Required     int    // distinct approvers needed (multi-level)
	RequestedBy  string
	Status       ApprovalStatus
	Reason       string
	ExpiresAt    time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// NotifiedAt is when its mail was handed to the SMTP server (nil: not yet).
	NotifiedAt *time.Time
	Decisions  []*ApprovalDecision
}

// ApprovalDecision is one person's approve or reject, with a comment.
type ApprovalDecision struct {
	ApprovalID string
	Actor      string
	Approve    bool
	Comment    string
	At         time.Time
}

// RolloutExecutor is the rollout engine's part of the store. Deployments are created with their
// clusters (and approvals) in one transaction; transitions go through DeploymentUpdate, which
// locks the row (SELECT … FOR UPDATE on PostgreSQL; the one write connection on SQLite), applies
// fn, and writes it back with Revision+1.
type RolloutExecutor interface {
	EngineExecutor

	// DeploymentCreate inserts d with its clusters (all Active) atomically; an empty ID gets a
	// UUID, an empty Status is Planning, Revision starts at 0. ErrNotFound: unknown operator;
	// ErrAlreadyExists: the id is taken; ErrConflict: the operator already has an active
	// deployment to one of the clusters (the partial unique index).
	DeploymentCreate(ctx context.Context, d *Deployment) (*Deployment, error)
	// DeploymentGetByID returns the deployment with its clusters, in the order created.
	DeploymentGetByID(ctx context.Context, id string) (*Deployment, error)
	// DeploymentList returns a page, newest first, each deployment with its clusters.
	DeploymentList(ctx context.Context, p *DeploymentListParams) ([]*Deployment, error)
	// DeploymentUpdate applies fn to the locked deployment and writes it back (Revision+1,
	// UpdatedAt now unless fn set it) with every cluster fn changed; fn's error is returned as
	// is and nothing is written. Becoming terminal sets FinishedAt, clears every Active and the pause.
	DeploymentUpdate(ctx context.Context, id string, fn func(d *Deployment) error) (*Deployment, error)
	// DeploymentCountActive counts the deployments that are not terminal.
	DeploymentCountActive(ctx context.Context) (int, error)
	// DeploymentCountByStatus counts deployments by status (a status without any has no entry):
	// what a concurrency limit that leaves Queued or WaitingApproval out needs, and the gauges.
	DeploymentCountByStatus(ctx context.Context) (map[DeploymentStatus]int, error)
	// DeploymentEventInsert appends an event; ids increase, and one deployment's events commit
	// in id order (resuming after an id misses none).
	DeploymentEventInsert(ctx context.Context, e *DeploymentEvent) (*DeploymentEvent, error)
	DeploymentEventList(ctx context.Context, p *DeploymentEventListParams) ([]*DeploymentEvent, error)

	// ApprovalCreate inserts a pending approval without decisions (Required at least 1).
	ApprovalCreate(ctx context.Context, a *Approval) (*Approval, error)
	// ApprovalGetByID and ApprovalList return approvals with their decisions, oldest first.
	ApprovalGetByID(ctx context.Context, id string) (*Approval, error)
	ApprovalList(ctx context.Context, p *ApprovalListParams) ([]*Approval, error)
	// ApprovalDecide records a decision and moves the approval to approved (enough distinct
	// approvers), rejected (any rejection) or leaves it pending; a decision on a decided or
	// expired approval, or a second one by the same actor, is ErrConflict; so is the requester's
	// own decision. It returns the updated approval with its decisions.
	ApprovalDecide(ctx context.Context, d *ApprovalDecision, now time.Time) (*Approval, error)
	// ApprovalExpire marks pending approvals past their expiry as expired and returns them.
	ApprovalExpire(ctx context.Context, now time.Time) ([]*Approval, error)
}

// DeploymentListParams filters deployments, newest first; Before pages by creation (the last id
// of the previous page).
type DeploymentListParams struct {
	OperatorID string
	Status     DeploymentStatus
	Active     bool // only deployments that are not terminal
	Before     string
	Limit      int
}

// DeploymentEventListParams selects a deployment's events after an id (0: from the start), oldest first.
type DeploymentEventListParams struct {
	DeploymentID string
	AfterID      int64
	Limit        int
}

// ApprovalListParams filters approvals, newest first.
type ApprovalListParams struct {
	Status       ApprovalStatus
	DeploymentID string
	// Unnotified selects the approvals whose mail has not been sent (NotifiedAt nil).
	Unnotified bool
	Before     string
	Limit      int
}
