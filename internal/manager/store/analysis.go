package store

import (
	"context"
	"encoding/json"
	"time"
)

// AnalysisTemplate is a stored analysis (internal/manager/analysis.Template as JSON): a
// deployment copies it when it is created, so an edit changes later deployments only.
type AnalysisTemplate struct {
	Name      string
	Spec      json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AnalysisTemplateListParams pages the templates by name.
type AnalysisTemplateListParams struct {
	After string
	Limit int
}

// ClusterPrometheus is the Prometheus a cluster's analyses ask: its URL, auth kind ("none",
// "bearer", "basic") and CA in clear; the token or the basic-auth credentials sealed by KeyID
// (never in clear text in the store).
type ClusterPrometheus struct {
	ClusterID   string
	ClusterName string
	URL         string
	AuthKind    string
	// SecretCiphertext is the sealed secret; nil for auth "none".
	SecretCiphertext []byte
	KeyID            string
	// CAPEM is the CA bundle trusted for an https URL; "" for the system roots.
	CAPEM     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AnalysisMeasurement is one measurement of an analysis of a deployment on a cluster, in a stage.
type AnalysisMeasurement struct {
	ID           int64
	DeploymentID string
	Cluster      string
	StageIndex   int
	AnalysisName string
	// Query is the rendered query.
	Query string
	// Value and BaselineValue are nil when the query gave no value (no data, NaN, an error).
	Value         *float64
	BaselineValue *float64
	Verdict       string
	Message       string
	MeasuredAt    time.Time
}

// AnalysisExecutor stores analysis templates, clusters' Prometheus configs and measurements
// (migration 00014).
type AnalysisExecutor interface {
	// AnalysisTemplateCreate stores t (CreatedAt and UpdatedAt as given); ErrAlreadyExists when
	// the name is taken.
	AnalysisTemplateCreate(ctx context.Context, t *AnalysisTemplate) (*AnalysisTemplate, error)
	// AnalysisTemplateGet is the template named name; ErrNotFound when there is none.
	AnalysisTemplateGet(ctx context.Context, name string) (*AnalysisTemplate, error)
	// AnalysisTemplateList lists templates by name, after p.After.
	AnalysisTemplateList(ctx context.Context, p *AnalysisTemplateListParams) ([]*AnalysisTemplate, error)
	// AnalysisTemplateUpdate replaces the spec of t.Name and its UpdatedAt; ErrNotFound when
	// there is no such template.
	AnalysisTemplateUpdate(ctx context.Context, t *AnalysisTemplate) (*AnalysisTemplate, error)
	// AnalysisTemplateDelete removes it; ErrNotFound when there is none.
	AnalysisTemplateDelete(ctx context.Context, name string) error

	// ClusterPrometheusSet creates or replaces the config of the cluster p.ClusterName
	// (p.UpdatedAt is now; CreatedAt is kept on a replace); ErrNotFound when the cluster is not
	// registered.
	ClusterPrometheusSet(ctx context.Context, p *ClusterPrometheus) (*ClusterPrometheus, error)
	// ClusterPrometheusGet is the config of the cluster named clusterName; ErrNotFound when the
	// cluster has none (or does not exist).
	ClusterPrometheusGet(ctx context.Context, clusterName string) (*ClusterPrometheus, error)
	// ClusterPrometheusDelete removes it; ErrNotFound when there is none.
	ClusterPrometheusDelete(ctx context.Context, clusterName string) error
	// ClusterPrometheusListSealed lists every config with a sealed secret (key rotation).
	ClusterPrometheusListSealed(ctx context.Context) ([]*ClusterPrometheus, error)

	// AnalysisMeasurementInsert stores m and returns it with its ID; ErrNotFound when the
	// deployment does not exist.
	AnalysisMeasurementInsert(ctx context.Context, m *AnalysisMeasurement) (*AnalysisMeasurement, error)
	// AnalysisMeasurementList lists a deployment's measurements in the order they were stored.
	AnalysisMeasurementList(ctx context.Context, deploymentID string) ([]*AnalysisMeasurement, error)
}
