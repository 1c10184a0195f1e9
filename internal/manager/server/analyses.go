package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

func templateOut(t *store.AnalysisTemplate) (api.AnalysisTemplate, error) {
	var spec analysis.Spec
	if err := json.Unmarshal(t.Spec, &spec); err != nil {
		return api.AnalysisTemplate{}, err
	}
	args := spec.Args
	if args == nil {
		args = []api.AnalysisArg{}
	}
	w := spec.Template()
	return api.AnalysisTemplate{Name: t.Name, Query: w.Query, SuccessCondition: w.SuccessCondition, Interval: w.Interval,
		Count: w.Count, FailureLimit: w.FailureLimit, InconclusiveLimit: w.InconclusiveLimit,
		ConsecutiveErrorLimit: *w.ConsecutiveErrorLimit, Args: args, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}, nil
}

// parseTemplate decodes and validates a template body; a PUT's name comes from its path.
func (s *Server) parseTemplate(r *http.Request, pathName string) (analysis.Spec, []byte, error) {
	var t api.Analysis
	if err := s.decodeJSON(r, &t); err != nil {
		return analysis.Spec{}, nil, err
	}
	if pathName != "" {
		if t.Name != "" && t.Name != pathName {
			return analysis.Spec{}, nil, errInvalid("name", "%q differs from the path's %q: a template is renamed by creating it anew", t.Name, pathName)
		}
		t.Name = pathName
	}
	spec, err := analysis.Parse(t)
	if err != nil {
		return analysis.Spec{}, nil, err
	}
	b, err := json.Marshal(spec)
	return spec, b, err
}

// analysisErr records entry with err's result and maps err.
func (s *Server) analysisErr(ctx context.Context, entry audit.Entry, kind, name string, err error) error {
	entry.Result = resultOf(err)
	if e, ok := invalid.As(err); ok {
		entry.Details = map[string]any{"field": e.Field, "reason": e.Reason}
	}
	s.audit.Record(ctx, entry)
	switch {
	case errors.Is(err, store.ErrAlreadyExists):
		return errAlreadyExists(kind, name)
	case errors.Is(err, store.ErrNotFound):
		return errNotFound(kind, name)
	}
	return err
}

func (s *Server) createAnalysisTemplate(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	entry := audit.Entry{Action: "analysistemplate.create", TargetKind: "analysisTemplate"}
	spec, b, err := s.parseTemplate(r, "")
	entry.TargetName = spec.Name
	if err != nil {
		return s.analysisErr(ctx, entry, "analysis template", spec.Name, err)
	}
	now := s.now().UTC()
	t, err := s.store.AnalysisTemplateCreate(ctx, &store.AnalysisTemplate{Name: spec.Name, Spec: b, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return s.analysisErr(ctx, entry, "analysis template", spec.Name, err)
	}
	return s.writeTemplate(w, r, entry, t, http.StatusCreated)
}

func (s *Server) writeTemplate(w http.ResponseWriter, r *http.Request, entry audit.Entry, t *store.AnalysisTemplate, status int) error {
	out, err := templateOut(t)
	if err != nil {
		return err
	}
	entry.Result, entry.Details = audit.Success, map[string]any{"query": out.Query}
	s.audit.Record(r.Context(), entry)
	writeJSON(r.Context(), s.log, w, status, out)
	return nil
}

func (s *Server) updateAnalysisTemplate(w http.ResponseWriter, r *http.Request) error {
	ctx, name := r.Context(), r.PathValue("name")
	entry := audit.Entry{Action: "analysistemplate.update", TargetKind: "analysisTemplate", TargetName: name}
	_, b, err := s.parseTemplate(r, name)
	if err != nil {
		return s.analysisErr(ctx, entry, "analysis template", name, err)
	}
	// Deployments keep the copy they were created with: an edit changes later ones only.
	t, err := s.store.AnalysisTemplateUpdate(ctx, &store.AnalysisTemplate{Name: name, Spec: b, UpdatedAt: s.now().UTC()})
	if err != nil {
		return s.analysisErr(ctx, entry, "analysis template", name, err)
	}
	return s.writeTemplate(w, r, entry, t, http.StatusOK)
}

func (s *Server) getAnalysisTemplate(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	t, err := s.store.AnalysisTemplateGet(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("analysis template", name)
	}
	if err != nil {
		return err
	}
	out, err := templateOut(t)
	if err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) listAnalysisTemplates(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	list, err := s.store.AnalysisTemplateList(r.Context(), &store.AnalysisTemplateListParams{After: p.After, Limit: p.Limit})
	if err != nil {
		return err
	}
	out := api.AnalysisTemplateList{Items: make([]api.AnalysisTemplate, 0, len(list))}
	for _, t := range list {
		o, err := templateOut(t)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, o)
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].Name)
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteAnalysisTemplate(w http.ResponseWriter, r *http.Request) error {
	ctx, name := r.Context(), r.PathValue("name")
	entry := audit.Entry{Action: "analysistemplate.delete", TargetKind: "analysisTemplate", TargetName: name}
	if err := s.store.AnalysisTemplateDelete(ctx, name); err != nil {
		return s.analysisErr(ctx, entry, "analysis template", name, err)
	}
	entry.Result = audit.Success
	s.audit.Record(ctx, entry)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func prometheusOut(p *store.ClusterPrometheus) api.Prometheus {
	return api.Prometheus{Cluster: p.ClusterName, URL: p.URL, Auth: p.AuthKind, CASet: p.CAPEM != "", CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func (s *Server) setClusterPrometheus(w http.ResponseWriter, r *http.Request) error {
	ctx, name := r.Context(), r.PathValue("name")
	entry := audit.Entry{Action: "cluster.prometheus.set", TargetKind: "cluster", TargetName: name}
	var req api.PrometheusRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return s.analysisErr(ctx, entry, "cluster", name, err)
	}
	c, err := s.clusterByName(r)
	if err != nil {
		return s.analysisErr(ctx, entry, "cluster", name, err)
	}
	cfg := analysis.Prometheus{URL: req.URL, AuthKind: req.Auth, BearerToken: req.Token, Username: req.Username,
		Password: req.Password, CAPEM: []byte(req.CA)}
	if cfg.AuthKind == "" {
		cfg.AuthKind = analysis.AuthNone
	}
	if err := cfg.Validate(); err != nil {
		return s.analysisErr(ctx, entry, "cluster", name, err)
	}
	if err := verifyPrometheus(ctx, cfg); err != nil {
		return s.analysisErr(ctx, entry, "cluster", name, err)
	}
	if cfg.AuthKind != analysis.AuthNone && s.sealer == nil {
		return s.analysisErr(ctx, entry, "cluster", name, errNoSealer)
	}
	row, err := analysis.Seal(s.sealer, c.ID, c.Name, cfg)
	if err != nil {
		return s.analysisErr(ctx, entry, "cluster", name, err)
	}
	row.UpdatedAt = s.now().UTC()
	out, err := s.store.ClusterPrometheusSet(ctx, row)
	if err != nil {
		return s.analysisErr(ctx, entry, "cluster", name, err)
	}
	entry.Result, entry.Details = audit.Success, map[string]any{"url": out.URL, "auth": out.AuthKind, "caSet": out.CAPEM != ""}
	s.audit.Record(ctx, entry)
	writeJSON(ctx, s.log, w, http.StatusOK, prometheusOut(out))
	return nil
}

// verifyPrometheus asks Prometheus for vector(1) with cfg: a config that cannot reach it (the
// URL, the credentials, the CA) is refused when it is set, not at a deployment's first analysis.
func verifyPrometheus(ctx context.Context, cfg analysis.Prometheus) error {
	api, err := cfg.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, err := api.Query(ctx, "vector(1)", time.Time{}); err != nil {
		return invalid.Reasoned("url", "unreachable", err, "Prometheus at %s does not answer a query with these settings: %v", cfg.URL, err)
	}
	return nil
}

func (s *Server) getClusterPrometheus(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	p, err := s.store.ClusterPrometheusGet(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return s.prometheusNotFound(r, name)
	}
	if err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, prometheusOut(p))
	return nil
}

// prometheusNotFound says whether the cluster or only its Prometheus is missing.
func (s *Server) prometheusNotFound(r *http.Request, name string) error {
	if _, err := s.clusterByName(r); err != nil {
		return err
	}
	return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "cluster " + name + " has no Prometheus configured",
		Details: map[string]any{"kind": "prometheus", "name": name}}
}

func (s *Server) deleteClusterPrometheus(w http.ResponseWriter, r *http.Request) error {
	ctx, name := r.Context(), r.PathValue("name")
	entry := audit.Entry{Action: "cluster.prometheus.delete", TargetKind: "cluster", TargetName: name}
	err := s.store.ClusterPrometheusDelete(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		err = s.prometheusNotFound(r, name)
	}
	entry.Result = resultOf(err)
	s.audit.Record(ctx, entry)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// analysisRunsOf are d's analysis runs from its stored measurements, judged by the analyses it
// was created with.
func (s *Server) analysisRunsOf(ctx context.Context, d *store.Deployment) ([]api.AnalysisRun, error) {
	out := []api.AnalysisRun{}
	if len(d.Analyses) == 0 {
		return out, nil
	}
	var planned []analysis.Planned
	if err := json.Unmarshal(d.Analyses, &planned); err != nil {
		return nil, fmt.Errorf("deployment %s: stored analyses: %w", d.ID, err)
	}
	byName := map[string]analysis.Planned{}
	for _, p := range planned {
		byName[p.Spec.Name] = p
	}
	ms, err := s.store.AnalysisMeasurementList(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	index := map[[3]string]int{}
	judged := map[int][]analysis.Measurement{}
	for _, m := range ms {
		key := [3]string{m.AnalysisName, m.Cluster, strconv.Itoa(m.StageIndex)}
		i, ok := index[key]
		if !ok {
			p := byName[m.AnalysisName]
			i = len(out)
			index[key] = i
			out = append(out, api.AnalysisRun{Name: m.AnalysisName, Template: p.Template, Cluster: m.Cluster, Stage: m.StageIndex + 1,
				Count: p.Spec.Count, Measurements: []api.AnalysisMeasurement{}})
		}
		out[i].Measurements = append(out[i].Measurements, api.AnalysisMeasurement{Query: m.Query, Value: m.Value,
			BaselineValue: m.BaselineValue, Verdict: m.Verdict, Message: m.Message, At: m.MeasuredAt})
		judged[i] = append(judged[i], analysis.Measurement{Query: m.Query, Value: m.Value, BaselineValue: m.BaselineValue,
			Verdict: analysis.Verdict(m.Verdict), Message: m.Message, At: m.MeasuredAt})
	}
	for i := range out {
		phase, why := analysis.Evaluate(byName[out[i].Name].Spec, judged[i])
		out[i].Phase, out[i].Message = string(phase), why
	}
	return out, nil
}
