package store

import (
	"context"
	"encoding/json"
	"time"
)

// EngineExecutor is what the rollout engine needs beyond records: claims on deployments that
// move between replicas, admission under the concurrency limit, where each operator version is
// live, the latest health per (operator, cluster), and named leases (leader duties).
type EngineExecutor interface {
	// DeploymentClaim claims up to p.Limit deployments that are due (NextRunAt ≤ p.Now) and that
	// no live claim holds (ClaimedBy empty, or LeaseUntil before p.Now): it sets ClaimedBy to
	// p.Owner and LeaseUntil to p.Now+p.Lease and returns them with their clusters, earliest
	// NextRunAt first. On PostgreSQL rows another replica is claiming are skipped (FOR UPDATE
	// SKIP LOCKED), so two replicas never claim one deployment.
	DeploymentClaim(ctx context.Context, p *DeploymentClaimParams) ([]*Deployment, error)
	// DeploymentRenew extends owner's claim on the deployment to until; ErrConflict when owner
	// does not hold it any more (it lapsed and another replica took it).
	DeploymentRenew(ctx context.Context, id, owner string, until time.Time) error
	// DeploymentAdmit moves Queued deployments to Planning (NextRunAt now), oldest first, while
	// fewer than p.Limit deployments are running (Planning, Deploying, Validating, RollingBack),
	// skipping the operators that have a deployment RollingBack. Admissions serialize across
	// replicas (an advisory lock on PostgreSQL), so the limit holds exactly. It returns the ids
	// admitted, and how many stay queued.
	DeploymentAdmit(ctx context.Context, p *DeploymentAdmitParams) (*DeploymentAdmitResult, error)
	// LiveReleaseList returns, per (operator, cluster), the newest deployment cluster row that
	// is healthy: where each operator version runs now (the health loop's targets, and the
	// release a new deployment upgrades). Ordered by operator name, then cluster.
	LiveReleaseList(ctx context.Context, p *LiveReleaseListParams) ([]*LiveRelease, error)

	// OperatorHealthRecord stores the latest health check of an operator on a cluster
	// (an upsert). ConsecutiveFailures: +1 when Health is Unhealthy, 0 when Healthy, unchanged
	// otherwise (Degraded: a check that could not run neither counts nor resets); a record for
	// another deployment than the stored one starts over from 0.
	OperatorHealthRecord(ctx context.Context, p *OperatorHealthRecordParams) (*OperatorHealth, error)
	// OperatorHealthList returns the stored health of an operator (on one cluster when
	// p.ClusterName is set; every operator when p.OperatorName is empty), by operator then cluster.
	OperatorHealthList(ctx context.Context, p *OperatorHealthListParams) ([]*OperatorHealth, error)
	// OperatorHealthDelete forgets an operator's health on a cluster (no longer deployed there).
	OperatorHealthDelete(ctx context.Context, operatorName, clusterName string) error

	// LeaseAcquire takes the named lease for p.Owner until p.Until when it is free, lapsed
	// (expires before p.Now) or already p.Owner's (a renewal); it reports whether p.Owner holds
	// it afterwards.
	LeaseAcquire(ctx context.Context, p *LeaseAcquireParams) (bool, error)
	// LeaseRelease gives the named lease up if owner holds it.
	LeaseRelease(ctx context.Context, name, owner string) error
	// LeaseGet reads who holds the named lease and until when (lapsed or not); ErrNotFound
	// when nobody does: what a refusal to wait longer for it tells.
	LeaseGet(ctx context.Context, name string) (*Lease, error)

	// ApprovalMarkNotified records that the approval's mail was sent.
	ApprovalMarkNotified(ctx context.Context, id string, at time.Time) error
}

type DeploymentClaimParams struct {
	Owner string
	Now   time.Time
	Lease time.Duration
	Limit int
}

type DeploymentAdmitParams struct {
	Limit int
	Now   time.Time
}

type DeploymentAdmitResult struct {
	Admitted []string
	// Running counts the running deployments after the admissions; Queued those left waiting.
	Running int
	Queued  int
}

type LiveReleaseListParams struct {
	OperatorName string // "" for all
	ClusterName  string // "" for all
}

// LiveRelease is where an operator version runs on a cluster, from the deployment that put it there.
type LiveRelease struct {
	OperatorID       string
	OperatorName     string
	ClusterName      string
	Environment      Environment
	DeploymentID     string
	DeploymentStatus DeploymentStatus
	Version          string
	Namespace        string
	Release          string
	HelmRevision     int
	// DeploymentFinishedAt is when the deployment ended (nil while it runs): its bake window,
	// during which an Unhealthy check still rolls it back, starts then.
	DeploymentFinishedAt *time.Time
	// BakeWindow is the deployment's (store.Deployment.BakeWindow; 0: none).
	BakeWindow time.Duration
	// Superseded: a newer deployment of the operator has been on this cluster since (it failed
	// or was rolled back there, restoring this release). The health loop never rolls a superseded
	// deployment back: that would go past the version the newer one replaced.
	Superseded bool
}

// OperatorHealth is the latest health check of an operator on a cluster.
type OperatorHealth struct {
	OperatorName        string
	ClusterName         string
	DeploymentID        string
	Health              string          // Healthy, Degraded, Unhealthy
	Result              json.RawMessage // the check's result (health.ClusterHealth) as JSON
	ConsecutiveFailures int
	CheckedAt           time.Time
}

type OperatorHealthRecordParams struct {
	OperatorName string
	ClusterName  string
	DeploymentID string
	Health       string
	Result       json.RawMessage
	CheckedAt    time.Time
}

type OperatorHealthListParams struct {
	OperatorName string
	ClusterName  string
}

// Lease is a named lease's holder and its end.
type Lease struct {
	Name      string
	Owner     string
	ExpiresAt time.Time
}

type LeaseAcquireParams struct {
	Name  string
	Owner string
	Now   time.Time
	Until time.Time
}
