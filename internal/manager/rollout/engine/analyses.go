package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// resolveAnalyses resolves the request's analyses into spec (stored templates copied: a later
// edit does not change the deployment) and refuses a target cluster that has no Prometheus to
// ask, naming it.
func (e *Engine) resolveAnalyses(ctx context.Context, req *api.DeploymentRequest, spec *request.Spec) error {
	if len(req.Analyses) == 0 {
		return nil
	}
	templates := analysis.StoreTemplates(func(name string) (*store.AnalysisTemplate, error) {
		return e.cfg.Store.AnalysisTemplateGet(ctx, name)
	})
	if err := spec.ResolveAnalyses(req.Analyses, templates); err != nil {
		return err
	}
	for _, t := range spec.Targets {
		_, err := e.cfg.Store.ClusterPrometheusGet(ctx, t.Name)
		if errors.Is(err, store.ErrNotFound) {
			return invalid.Reasoned("analyses", "noPrometheus", nil,
				"cluster %q has no Prometheus to run the analyses against: set it with PUT /api/v1/clusters/%s/prometheus (slipway cluster prometheus set), or deploy without analyses", t.Name, t.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// noWait is analyze's wait when no measurement is due: the hold's own interval decides.
const noWait = time.Hour

// analysisRun is one analysis on one cluster in one stage, with its measurements so far.
type analysisRun struct {
	planned analysis.Planned
	cluster *store.DeploymentCluster
	ms      []analysis.Measurement
}

// analyze runs the stage's analyses on its installed clusters: the measurements that are due are
// taken and stored. It returns why the stage fails (a run Failed, Inconclusive or Error: "" when
// none did), whether every run has all its measurements (the stage passes only then), and the
// time until the next measurement is due.
func (e *Engine) analyze(ctx context.Context, d *store.Deployment, op *store.Operator, spec *request.Spec, st *strategy.Stage) (failed string, done bool, wait time.Duration, err error) {
	runs, err := e.analysisRuns(ctx, d, spec, st)
	if err != nil || len(runs) == 0 {
		return "", true, noWait, err
	}
	done, wait = true, noWait
	apis := map[string]analysis.Querier{}
	for _, r := range runs {
		phase, why := analysis.Evaluate(r.planned.Spec, r.ms)
		next, due := analysis.NextAt(r.planned.Spec, *d.StageStartedAt, r.ms)
		if due && !next.After(e.now()) {
			m := e.measure(ctx, d, op, r, apis)
			r.ms = append(r.ms, m)
			phase, why = analysis.Evaluate(r.planned.Spec, r.ms)
			next, due = analysis.NextAt(r.planned.Spec, *d.StageStartedAt, r.ms)
		}
		switch {
		case phase == analysis.PhaseSuccessful:
			continue
		case phase.Terminal():
			return fmt.Sprintf("%s on %s: %s", phase, r.cluster.ClusterName, why), false, 0, nil
		}
		done = false
		if due {
			wait = min(wait, max(next.Sub(e.now()), time.Second))
		}
	}
	return "", done, wait, nil
}

// analysisRuns are the runs of the stage: each analysis that runs in it, on each of its
// installed clusters, with the measurements stored for it.
func (e *Engine) analysisRuns(ctx context.Context, d *store.Deployment, spec *request.Spec, st *strategy.Stage) ([]*analysisRun, error) {
	var runs []*analysisRun
	for _, p := range spec.Analyses {
		if !p.RunsIn(st.Index + 1) {
			continue
		}
		for _, name := range st.Clusters {
			if c := clusterByName(d, name); c != nil && c.Status == store.ClusterValidating {
				runs = append(runs, &analysisRun{planned: p, cluster: c})
			}
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	stored, err := e.cfg.Store.AnalysisMeasurementList(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		for _, m := range stored {
			if m.StageIndex == st.Index && m.Cluster == r.cluster.ClusterName && m.AnalysisName == r.planned.Spec.Name {
				r.ms = append(r.ms, MeasurementOf(m))
			}
		}
	}
	return runs, nil
}

// MeasurementOf is a stored measurement as the analysis package judges it.
func MeasurementOf(m *store.AnalysisMeasurement) analysis.Measurement {
	return analysis.Measurement{Query: m.Query, Value: m.Value, BaselineValue: m.BaselineValue,
		Verdict: analysis.Verdict(m.Verdict), Message: m.Message, At: m.MeasuredAt}
}

// measure takes one measurement of r now, against its cluster's Prometheus, and stores it (a
// measurement that cannot be stored is still judged: the next step measures again).
func (e *Engine) measure(ctx context.Context, d *store.Deployment, op *store.Operator, r *analysisRun, apis map[string]analysis.Querier) analysis.Measurement {
	c := r.cluster
	now := e.now()
	q, err := r.planned.Spec.Render(analysis.Builtins{Cluster: c.ClusterName, Namespace: c.Namespace, Release: c.Release,
		Operator: op.Name, Version: d.Version, PreviousVersion: c.PreviousVersion})
	m := analysis.Measurement{Query: q, At: now.UTC(), Verdict: analysis.Error}
	if err != nil {
		m.Message = "rendering the query: " + err.Error()
	} else if api, err := e.prometheusAPI(ctx, c.ClusterName, apis); err != nil {
		m.Message = err.Error()
	} else {
		baseline := d.CreatedAt
		if d.StartedAt != nil {
			baseline = *d.StartedAt
		}
		m = analysis.Measure(ctx, api, q, r.planned.Spec.Condition, baseline, now)
	}
	_, err = e.cfg.Store.AnalysisMeasurementInsert(ctx, &store.AnalysisMeasurement{DeploymentID: d.ID, Cluster: c.ClusterName,
		StageIndex: d.Stage, AnalysisName: r.planned.Spec.Name, Query: m.Query, Value: m.Value, BaselineValue: m.BaselineValue,
		Verdict: string(m.Verdict), Message: m.Message, MeasuredAt: m.At})
	if err != nil {
		e.log.WarnContext(ctx, "engine: Storing an analysis measurement failed", "deployment", d.ID, "err", err)
	}
	e.event(ctx, d.ID, "analysis.measured", c.ClusterName, fmt.Sprintf("analysis %s: %s: %s", r.planned.Spec.Name, m.Verdict, m.Message),
		map[string]any{"query": m.Query, "value": m.Value, "baselineValue": m.BaselineValue})
	return m
}

// prometheusAPI is the PromQL client of the cluster's Prometheus (one per cluster and step).
func (e *Engine) prometheusAPI(ctx context.Context, cluster string, apis map[string]analysis.Querier) (analysis.Querier, error) {
	if api := apis[cluster]; api != nil {
		return api, nil
	}
	if e.cfg.Prometheus == nil {
		return nil, errors.New("this manager has no keyring to open the clusters' Prometheus settings with")
	}
	p, err := e.cfg.Prometheus(ctx, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("cluster %s has no Prometheus configured (PUT /api/v1/clusters/%s/prometheus)", cluster, cluster)
	}
	if err != nil {
		return nil, err
	}
	api, err := p.Client()
	if err != nil {
		return nil, err
	}
	apis[cluster] = api
	return api, nil
}
