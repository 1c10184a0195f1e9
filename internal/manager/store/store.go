// Package store is the operator manager's persistence boundary: one interface, two engines
// (pgstore: PostgreSQL through pgx v5; sqlitestore: embedded SQLite through modernc.org/sqlite),
// one conformance suite (storetest) that both pass.
//
// Methods follow one shape: ctx first, a params pointer, Noun+Verb names, a non-nil result or an
// error. Engine errors are mapped once, at the engine boundary, to ErrNotFound and
// ErrAlreadyExists; nothing returns nil, nil.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotFound: the object does not exist (a 404 at the API).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a unique key is taken (a 409 at the API).
	ErrAlreadyExists = errors.New("already exists")
	// ErrSchemaMismatch: the database's schema is newer or older than this binary knows.
	ErrSchemaMismatch = errors.New("database schema version mismatch")
)

// Executor is every query, usable on the pool or inside a transaction.
type Executor interface {
	RolloutExecutor
	NotificationsExecutor
	CRDHistoryExecutor
	OperatorLifecycleExecutor
	OperatorConfigExecutor
	LoginTicketExecutor
	TokenRevocationExecutor
	OperatorBaselineExecutor
	AnalysisExecutor

	ClusterCreate(ctx context.Context, p *ClusterCreateParams) (*Cluster, error)
	ClusterGetByName(ctx context.Context, name string) (*Cluster, error)
	ClusterList(ctx context.Context, p *ClusterListParams) ([]*Cluster, error)
	// ClusterUpdateHealth records a health check result; ErrNotFound when the cluster is gone.
	ClusterUpdateHealth(ctx context.Context, p *ClusterUpdateHealthParams) (*Cluster, error)
	// ClusterUpdateCredentials replaces the encrypted credentials (kubeconfig and the manager's
	// own ServiceAccount token) of one cluster, e.g. after a key rotation or a token refresh.
	ClusterUpdateCredentials(ctx context.Context, p *ClusterUpdateCredentialsParams) (*Cluster, error)
	ClusterDelete(ctx context.Context, name string) error
	ClusterCount(ctx context.Context) (int, error)

	OperatorCreate(ctx context.Context, p *OperatorCreateParams) (*Operator, error)
	OperatorGetByName(ctx context.Context, name string) (*Operator, error)
	OperatorGetByID(ctx context.Context, id string) (*Operator, error)
	OperatorList(ctx context.Context, p *OperatorListParams) ([]*Operator, error)
	OperatorCount(ctx context.Context) (int, error)
	// OperatorVersionUpsert records one discovered chart version of an operator (idempotent).
	OperatorVersionUpsert(ctx context.Context, p *OperatorVersionUpsertParams) (*OperatorVersion, error)
	// OperatorVersionList returns an operator's versions, newest semver first.
	OperatorVersionList(ctx context.Context, operatorID string) ([]*OperatorVersion, error)
	// OperatorVersionListMany is OperatorVersionList for several operators in one query (a list
	// page): versions by operator id, each newest semver first; an operator without versions
	// has no entry.
	OperatorVersionListMany(ctx context.Context, operatorIDs []string) (map[string][]*OperatorVersion, error)

	// CRDSchemaInsert stores one revision of a CRD's definition; a revision identical (same
	// digest) to one already stored for the same CRD and source returns ErrAlreadyExists.
	CRDSchemaInsert(ctx context.Context, p *CRDSchemaInsertParams) (*CRDSchema, error)
	// CRDSchemaList returns a CRD's revisions, oldest first.
	CRDSchemaList(ctx context.Context, p *CRDSchemaListParams) ([]*CRDSchema, error)
	// CRDList returns one summary per CRD name, ordered by name.
	CRDList(ctx context.Context, p *CRDListParams) ([]*CRDSummary, error)

	CRDApprovalCreate(ctx context.Context, p *CRDApprovalCreateParams) (*CRDApproval, error)
	CRDApprovalList(ctx context.Context, crdName string) ([]*CRDApproval, error)

	AuditInsert(ctx context.Context, p *AuditInsertParams) (*AuditEvent, error)
	AuditList(ctx context.Context, p *AuditListParams) ([]*AuditEvent, error)
}

// Tx is an Executor inside one transaction.
type Tx interface {
	Executor
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Store is an engine: the pool's Executor, transactions, liveness and the schema.
type Store interface {
	Executor
	Begin(ctx context.Context) (Tx, error)
	// Ping checks the database answers (GET /health).
	Ping(ctx context.Context) error
	// Engine names the engine: "postgres" or "sqlite".
	Engine() string
	Close() error
}

// WithTx runs fn in a transaction, committed when fn returns nil and rolled back otherwise. The
// rollback runs without the caller's cancellation, so a cancelled request still releases its
// transaction at once.
func WithTx(ctx context.Context, s Store, fn func(ctx context.Context, tx Tx) error) error {
	_, err := WithTxV(ctx, s, func(ctx context.Context, tx Tx) (struct{}, error) {
		return struct{}{}, fn(ctx, tx)
	})
	return err
}

// WithTxV is WithTx for a function with a result.
func WithTxV[T any](ctx context.Context, s Store, fn func(ctx context.Context, tx Tx) (T, error)) (T, error) {
	var zero T
	tx, err := s.Begin(ctx)
	if err != nil {
		return zero, fmt.Errorf("begin transaction: %w", err)
	}
	v, err := fn(ctx, tx)
	if err != nil {
		rollbackWithoutCancel(ctx, tx)
		return zero, err
	}
	if err := tx.Commit(ctx); err != nil {
		rollbackWithoutCancel(ctx, tx)
		return zero, fmt.Errorf("commit transaction: %w", err)
	}
	return v, nil
}

func rollbackWithoutCancel(ctx context.Context, tx Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx)
}

// Environment is where a cluster sits in the promotion order.
type Environment string

const (
	EnvironmentDev        Environment = "Dev"
	EnvironmentStaging    Environment = "Staging"
	EnvironmentProduction Environment = "Production"
)

// Environments in promotion order.
var Environments = []Environment{EnvironmentDev, EnvironmentStaging, EnvironmentProduction}

// Valid reports whether e is one of Environments.
func (e Environment) Valid() bool {
	for _, v := range Environments {
		if e == v {
			return true
		}
	}
	return false
}

// Health is the last known health of a cluster.
type Health string

const (
	HealthUnknown   Health = "Unknown"
	HealthHealthy   Health = "Healthy"
	HealthUnhealthy Health = "Unhealthy"
)

// Cluster is a registered Kubernetes cluster. The credentials are ciphertexts (AES-256-GCM) with
// the id of the key that sealed them; the store never sees a plaintext kubeconfig.
type Cluster struct {
	ID                string
	Name              string
	Environment       Environment
	KubernetesVersion string
	Health            Health
	HealthReason      string
	HealthCheckedAt   *time.Time
	// KubeconfigCiphertext is the registered (admin) kubeconfig, sealed by KeyID.
	KubeconfigCiphertext []byte
	// TokenCiphertext is the manager's own ServiceAccount token in the cluster, sealed by KeyID
	// (empty until the ServiceAccount is set up); TokenExpiresAt is when the token expires.
	TokenCiphertext []byte
	TokenExpiresAt  *time.Time
	KeyID           string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

type ClusterCreateParams struct {
	ID                   string
	Name                 string
	Environment          Environment
	KubernetesVersion    string
	Health               Health
	HealthReason         string
	HealthCheckedAt      *time.Time
	KubeconfigCiphertext []byte
	TokenCiphertext      []byte
	TokenExpiresAt       *time.Time
	KeyID                string
	Now                  time.Time
}

// ClusterListParams filters and pages a list ordered by name. After is the last name of the
// previous page ("" for the first); Limit is at most 1,000 (0 means 100).
type ClusterListParams struct {
	Environment Environment
	Health      Health
	After       string
	Limit       int
}

type ClusterUpdateHealthParams struct {
	Name              string
	Health            Health
	Reason            string
	KubernetesVersion string // left unchanged when empty
	CheckedAt         time.Time
}

type ClusterUpdateCredentialsParams struct {
	Name                 string
	KubeconfigCiphertext []byte
	TokenCiphertext      []byte
	TokenExpiresAt       *time.Time
	KeyID                string
	Now                  time.Time
}

// Operator is a registered operator: a Helm chart installed into Namespace of each cluster.
type Operator struct {
	ID              string
	Name            string
	Namespace       string
	ChartRepository string // https://, http:// chart repository URL or oci:// reference
	ChartName       string
	VersionFilter   string // a semver constraint narrowing the discovered versions ("" for all)
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// DeletedAt is when the operator was deleted (nil: it is not); a deleted operator keeps its
	// row so its history stays readable (OperatorLifecycleExecutor).
	DeletedAt *time.Time
}

type OperatorCreateParams struct {
	ID              string
	Name            string
	Namespace       string
	ChartRepository string
	ChartName       string
	VersionFilter   string
	Now             time.Time
}

// OperatorListParams pages a list ordered by name (After: the last name of the previous page).
type OperatorListParams struct {
	Namespace string
	After     string
	Limit     int
}

// OperatorVersion is one chart version of an operator.
type OperatorVersion struct {
	OperatorID string
	Version    string // semver, as the chart source lists it
	AppVersion string
	Digest     string // the chart archive's digest when the source gives it
	CreatedAt  time.Time
	// RemovedAt is when the version was found gone from the chart source or outside the version
	// filter (nil: available), RemovedReason why (VersionRemovedFromSource, VersionRemovedByFilter).
	RemovedAt     *time.Time
	RemovedReason string
}

type OperatorVersionUpsertParams struct {
	OperatorID string
	Version    string
	AppVersion string
	Digest     string
	Now        time.Time
}

// CRDSchema is one revision of a CustomResourceDefinition's definition as a source shipped it.
type CRDSchema struct {
	ID         int64
	Name       string // metadata.name: <plural>.<group>
	Group      string
	Kind       string
	Scope      string
	OperatorID string // "" for a definition posted to /crds directly
	Version    string // the operator (chart) version it came from, or the revision label posted
	Digest     string // sha256 of Definition
	Definition []byte // the CRD as JSON
	CreatedAt  time.Time
	// Note is the revision's migration note (migration 00006): how to move objects to it.
	Note MigrationNote
}

type CRDSchemaInsertParams struct {
	Name       string
	Group      string
	Kind       string
	Scope      string
	OperatorID string
	Version    string
	Digest     string
	Definition []byte
	Note       MigrationNote
	Now        time.Time
}

// CRDSchemaListParams selects a CRD's revisions, optionally of one operator only.
type CRDSchemaListParams struct {
	Name       string
	OperatorID string
}

// CRDSummary is a CRD with its latest revision.
type CRDSummary struct {
	Name      string
	Group     string
	Kind      string
	Revisions int
	Latest    *CRDSchema
}

type CRDListParams struct {
	Group string
	After string
	Limit int
}

// CRDApproval records who approved a breaking change of a CRD, from one definition to another.
type CRDApproval struct {
	ID         int64
	CRDName    string
	FromDigest string
	ToDigest   string
	ToVersion  string
	ApprovedBy string
	Reason     string
	RequestID  string
	CreatedAt  time.Time
}

type CRDApprovalCreateParams struct {
	CRDName    string
	FromDigest string
	ToDigest   string
	ToVersion  string
	ApprovedBy string
	Reason     string
	RequestID  string
	Now        time.Time
}

// AuditEvent is one mutation or cluster access: who did what to which target, with what result.
type AuditEvent struct {
	ID         int64
	At         time.Time
	Actor      string
	Action     string // e.g. "cluster.create", "cluster.access", "crd.approve"
	TargetKind string
	TargetName string
	Result     string // "success", "denied", "failed", "invalid"
	RequestID  string
	Details    string // JSON object with extra fields; never a secret
}

type AuditInsertParams struct {
	At         time.Time
	Actor      string
	Action     string
	TargetKind string
	TargetName string
	Result     string
	RequestID  string
	Details    string
}

// AuditListParams filters the audit log, newest first. BeforeID pages (0 for the first page).
type AuditListParams struct {
	Actor      string
	Action     string
	TargetKind string
	TargetName string
	Since      *time.Time
	BeforeID   int64
	Limit      int
}

// Page limits shared by every list.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// NormalizeLimit turns a requested limit into the one a list uses.
func NormalizeLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	default:
		return n
	}
}
