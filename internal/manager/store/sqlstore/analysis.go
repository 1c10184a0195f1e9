package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames,
		"AnalysisTemplateCreate", "AnalysisTemplateGet", "AnalysisTemplateList", "AnalysisTemplateUpdate",
		"AnalysisTemplateDelete", "ClusterPrometheusSet", "ClusterPrometheusGet", "ClusterPrometheusDelete",
		"ClusterPrometheusListSealed", "AnalysisMeasurementInsert", "AnalysisMeasurementList")
}

// Columns: name, spec, created_at, updated_at.
func scanAnalysisTemplate(row scanner) (*store.AnalysisTemplate, error) {
	var t store.AnalysisTemplate
	if err := row.Scan(&t.Name, rawJSON{&t.Spec}, timeDest{&t.CreatedAt}, timeDest{&t.UpdatedAt}); err != nil {
		return nil, err
	}
	return &t, nil
}

func checkTemplate(t *store.AnalysisTemplate) error {
	if strings.TrimSpace(t.Name) == "" {
		return fmt.Errorf("analysis template: empty name")
	}
	if len(t.Spec) == 0 || !json.Valid(t.Spec) {
		return fmt.Errorf("analysis template %s: spec is not a JSON document", t.Name)
	}
	return nil
}

func (e *executor) AnalysisTemplateCreate(ctx context.Context, t *store.AnalysisTemplate) (*store.AnalysisTemplate, error) {
	if err := checkTemplate(t); err != nil {
		return nil, err
	}
	out, err := scanAnalysisTemplate(e.w.QueryRowContext(ctx, e.q("AnalysisTemplateCreate"), t.Name, string(t.Spec),
		e.ts(t.CreatedAt), e.ts(t.UpdatedAt)))
	if err != nil {
		return nil, fmt.Errorf("create analysis template %s: %w", t.Name, e.mapErr(err))
	}
	return out, nil
}

func (e *executor) AnalysisTemplateGet(ctx context.Context, name string) (*store.AnalysisTemplate, error) {
	t, err := scanAnalysisTemplate(e.r.QueryRowContext(ctx, e.q("AnalysisTemplateGet"), name))
	if err != nil {
		return nil, fmt.Errorf("analysis template %q: %w", name, e.mapErr(err))
	}
	return t, nil
}

func (e *executor) AnalysisTemplateList(ctx context.Context, p *store.AnalysisTemplateListParams) ([]*store.AnalysisTemplate, error) {
	l := newListQuery()
	if p.After != "" {
		l.where("name > ?", p.After)
	}
	q, args := l.build(e.q("AnalysisTemplateList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, "list analysis templates", scanAnalysisTemplate)
}

func (e *executor) AnalysisTemplateUpdate(ctx context.Context, t *store.AnalysisTemplate) (*store.AnalysisTemplate, error) {
	if err := checkTemplate(t); err != nil {
		return nil, err
	}
	out, err := scanAnalysisTemplate(e.w.QueryRowContext(ctx, e.q("AnalysisTemplateUpdate"), t.Name, string(t.Spec), e.ts(t.UpdatedAt)))
	if err != nil {
		return nil, fmt.Errorf("update analysis template %s: %w", t.Name, e.mapErr(err))
	}
	return out, nil
}

func (e *executor) AnalysisTemplateDelete(ctx context.Context, name string) error {
	var n string
	if err := e.w.QueryRowContext(ctx, e.q("AnalysisTemplateDelete"), name).Scan(&n); err != nil {
		return fmt.Errorf("delete analysis template %q: %w", name, e.mapErr(err))
	}
	return nil
}

// Columns: cluster_id, [cluster name,] url, auth_kind, secret_ciphertext, key_id, ca_pem,
// created_at, updated_at.
func scanClusterPrometheus(row scanner, withName bool) (*store.ClusterPrometheus, error) {
	var p store.ClusterPrometheus
	dest := []any{&p.ClusterID}
	if withName {
		dest = append(dest, &p.ClusterName)
	}
	dest = append(dest, &p.URL, &p.AuthKind, &p.SecretCiphertext, &p.KeyID, &p.CAPEM, timeDest{&p.CreatedAt}, timeDest{&p.UpdatedAt})
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if len(p.SecretCiphertext) == 0 {
		p.SecretCiphertext = nil
	}
	return &p, nil
}

func (e *executor) ClusterPrometheusSet(ctx context.Context, p *store.ClusterPrometheus) (*store.ClusterPrometheus, error) {
	if p.URL == "" || p.AuthKind == "" {
		return nil, fmt.Errorf("cluster %s: prometheus: empty url or auth kind", p.ClusterName)
	}
	out, err := scanClusterPrometheus(e.w.QueryRowContext(ctx, e.q("ClusterPrometheusSet"), p.ClusterName, p.URL,
		p.AuthKind, emptyNil(p.SecretCiphertext), p.KeyID, p.CAPEM, e.ts(p.UpdatedAt)), false)
	if err != nil {
		return nil, fmt.Errorf("set the prometheus of cluster %q: %w", p.ClusterName, e.mapErr(err))
	}
	out.ClusterName = p.ClusterName
	return out, nil
}

func (e *executor) ClusterPrometheusGet(ctx context.Context, clusterName string) (*store.ClusterPrometheus, error) {
	p, err := scanClusterPrometheus(e.r.QueryRowContext(ctx, e.q("ClusterPrometheusGet"), clusterName), true)
	if err != nil {
		return nil, fmt.Errorf("prometheus of cluster %q: %w", clusterName, e.mapErr(err))
	}
	return p, nil
}

func (e *executor) ClusterPrometheusDelete(ctx context.Context, clusterName string) error {
	var id string
	if err := e.w.QueryRowContext(ctx, e.q("ClusterPrometheusDelete"), clusterName).Scan(&id); err != nil {
		return fmt.Errorf("delete the prometheus of cluster %q: %w", clusterName, e.mapErr(err))
	}
	return nil
}

func (e *executor) ClusterPrometheusListSealed(ctx context.Context) ([]*store.ClusterPrometheus, error) {
	return queryList(ctx, e, e.q("ClusterPrometheusListSealed"), nil, "list sealed prometheus configs",
		func(r scanner) (*store.ClusterPrometheus, error) { return scanClusterPrometheus(r, true) })
}

// floatArg is a measured value as a column: NULL for none (NaN and infinities never reach the
// store: PostgreSQL would keep them, SQLite not).
func floatArg(v *float64) any {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return nil
	}
	return *v
}

func (e *executor) AnalysisMeasurementInsert(ctx context.Context, m *store.AnalysisMeasurement) (*store.AnalysisMeasurement, error) {
	id, ok := normalizeID(m.DeploymentID)
	if !ok {
		return nil, fmt.Errorf("measurement of deployment %q: %w", m.DeploymentID, store.ErrNotFound)
	}
	out := *m
	out.DeploymentID = id
	out.MeasuredAt = normTime(m.MeasuredAt)
	err := e.w.QueryRowContext(ctx, e.q("AnalysisMeasurementInsert"), id, m.Cluster, m.StageIndex, m.AnalysisName,
		m.Query, floatArg(m.Value), floatArg(m.BaselineValue), m.Verdict, m.Message, e.ts(m.MeasuredAt)).Scan(&out.ID)
	if err = e.mapErr(err); errors.Is(err, ErrForeignKey) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store measurement of analysis %s of deployment %s: %w", m.AnalysisName, id, err)
	}
	return &out, nil
}

// Columns: id, deployment_id, cluster, stage_index, analysis_name, query, value, baseline_value,
// verdict, message, measured_at.
func scanMeasurement(row scanner) (*store.AnalysisMeasurement, error) {
	var m store.AnalysisMeasurement
	var v, b sql.NullFloat64
	if err := row.Scan(&m.ID, &m.DeploymentID, &m.Cluster, &m.StageIndex, &m.AnalysisName, &m.Query, &v, &b,
		&m.Verdict, &m.Message, timeDest{&m.MeasuredAt}); err != nil {
		return nil, err
	}
	if v.Valid {
		m.Value = &v.Float64
	}
	if b.Valid {
		m.BaselineValue = &b.Float64
	}
	return &m, nil
}

func (e *executor) AnalysisMeasurementList(ctx context.Context, deploymentID string) ([]*store.AnalysisMeasurement, error) {
	id, ok := normalizeID(deploymentID)
	if !ok {
		return []*store.AnalysisMeasurement{}, nil
	}
	return queryList(ctx, e, e.q("AnalysisMeasurementList"), []any{id}, "list measurements", scanMeasurement)
}
