package store

import (
	"context"
	"time"
)

// OperatorBaseline is a stored health baseline of an operator on a cluster: Data is
// health.Baseline as health.EncodeBaseline writes it (the store does not read it).
type OperatorBaseline struct {
	OperatorName string
	ClusterName  string
	// DeploymentID is the deployment whose start captured it; "" for the last Healthy check's.
	DeploymentID string
	Source       string
	CapturedAt   time.Time
	Data         []byte
}

// OperatorBaselinePutParams stores one baseline.
type OperatorBaselinePutParams struct {
	OperatorName string
	ClusterName  string
	DeploymentID string
	Source       string
	CapturedAt   time.Time
	Data         []byte
}

// OperatorBaselineGetParams names one baseline.
type OperatorBaselineGetParams struct {
	OperatorName string
	ClusterName  string
	// DeploymentID: "" for the last Healthy check's baseline.
	DeploymentID string
}

// OperatorBaselineListParams names an operator on a cluster.
type OperatorBaselineListParams struct {
	OperatorName string
	ClusterName  string
}

// MaxBaselineBytes bounds one stored baseline (gzipped JSON: 500 resources take about 10 kB).
const MaxBaselineBytes = 16 << 20

// OperatorBaselineExecutor stores health baselines (migration 00013).
type OperatorBaselineExecutor interface {
	// OperatorBaselinePut stores a baseline, replacing the one of the same operator, cluster and
	// deployment. A deployment's baseline also drops the older deployments' baselines of the
	// operator on the cluster: the newest deployment's and the last Healthy check's are kept.
	OperatorBaselinePut(ctx context.Context, p *OperatorBaselinePutParams) (*OperatorBaseline, error)
	// OperatorBaselineGet returns one baseline; ErrNotFound when there is none.
	OperatorBaselineGet(ctx context.Context, p *OperatorBaselineGetParams) (*OperatorBaseline, error)
	// OperatorBaselineList returns the baselines of an operator on a cluster (the newest
	// deployment's and the last Healthy check's: at most two), newest capture first; empty when
	// there are none.
	OperatorBaselineList(ctx context.Context, p *OperatorBaselineListParams) ([]*OperatorBaseline, error)
}
