package request

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Spec is a deployment request resolved once, at the edge or from the store, into what planning,
// the engine and the API use: the operator and version, the target clusters (sorted by
// environment, then name), the strategy's settings, the values and the strategy config as the
// store keeps them. Resolve builds it from a request, FromDeployment from a stored deployment;
// both give the same Spec for the same deployment.
type Spec struct {
	Operator string
	Version  string
	Targets  []Target
	api.Settings
	// Config is the strategy's config object as the request gave it (Request.ConfigJSON,
	// store.Deployment.Config): {} when it gave none.
	Config json.RawMessage
	// Values are Helm values (a JSON object, or empty); ValuesByEnvironment override them per
	// environment (ValuesFor).
	Values              json.RawMessage
	ValuesByEnvironment map[string]json.RawMessage
	// BakeWindow is the request's bakeWindow, or Defaults.BakeWindow when it gave none: how long
	// after completing the deployment is still watched as its clusters' change (0: not at all).
	BakeWindow time.Duration
	// Analyses run in the stages' holds, as the deployment was created with them (templates
	// copied): ResolveAnalyses sets them, the store keeps them (store.Deployment.Analyses).
	Analyses []analysis.Planned
}

// Defaults are the manager's settings for what a request leaves out.
type Defaults struct {
	// BakeWindow is the bake window of a request without bakeWindow (--bake-window; 0: none).
	BakeWindow time.Duration
}

// Resolve checks req against the registered clusters (known) and resolves it: the operator and
// version, the targets, the values, the strategy and its config (the one matching the strategy
// only; its periods, percentages, namespaces and clusterOrder) and the bake window, with def for
// what it leaves out. The first problem found is returned as an *invalid.Error naming its JSON
// path.
func Resolve(req *api.DeploymentRequest, known []Target, def Defaults) (*Spec, error) {
	if req == nil {
		return nil, &invalid.Error{Reason: "required", Message: "the request body is empty: send a JSON object"}
	}
	if err := name("operator", req.Operator); err != nil {
		return nil, err
	}
	if err := name("version", req.Version); err != nil {
		return nil, err
	}
	targets, err := Targets(req, known)
	if err != nil {
		return nil, err
	}
	if err := validateValues(req); err != nil {
		return nil, err
	}
	settings, err := api.ResolveSettings(req)
	if err != nil {
		return nil, err
	}
	if settings.Rolling != nil {
		if _, err := ClusterOrder(settings.Rolling.ClusterOrder, targets); err != nil {
			return nil, err
		}
	}
	bake, err := req.ResolveBakeWindow(def.BakeWindow)
	if err != nil {
		return nil, err
	}
	spec, err := specOf(req, targets, settings)
	if err != nil {
		return nil, err
	}
	spec.BakeWindow = bake
	return spec, nil
}

// FromDeployment rebuilds the Spec of a stored deployment: its strategy config, values and
// clusters, as Resolve made them when it was requested. It is the one reader of the request JSON
// the store keeps, so every replica, every engine step and the API re-plan a deployment alike.
func FromDeployment(d *store.Deployment) (*Spec, error) {
	req := &api.DeploymentRequest{Operator: d.OperatorName, Version: d.Version, Strategy: api.Strategy(d.Strategy), Values: d.Values}
	if err := req.SetConfigJSON(d.Config); err != nil {
		return nil, fmt.Errorf("deployment %s: stored config: %w", d.ID, err)
	}
	if len(d.ValuesByEnvironment) > 0 {
		if err := json.Unmarshal(d.ValuesByEnvironment, &req.ValuesByEnvironment); err != nil {
			return nil, fmt.Errorf("deployment %s: stored valuesByEnvironment: %w", d.ID, err)
		}
	}
	settings, err := api.ResolveSettings(req)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: stored config: %w", d.ID, err)
	}
	var planned []analysis.Planned
	if len(d.Analyses) > 0 {
		if err := json.Unmarshal(d.Analyses, &planned); err != nil {
			return nil, fmt.Errorf("deployment %s: stored analyses: %w", d.ID, err)
		}
	}
	targets := make([]Target, 0, len(d.Clusters))
	for _, c := range d.Clusters {
		targets = append(targets, Target{Name: c.ClusterName, Environment: string(c.Environment)})
	}
	SortTargets(targets)
	spec, err := specOf(req, targets, settings)
	if err != nil {
		return nil, err
	}
	spec.BakeWindow = d.BakeWindow
	spec.Analyses = planned
	return spec, nil
}

func specOf(req *api.DeploymentRequest, targets []Target, settings api.Settings) (*Spec, error) {
	cfg, err := req.ConfigJSON()
	if err != nil {
		return nil, err
	}
	s := &Spec{Operator: req.Operator, Version: req.Version, Targets: targets, Settings: settings, Config: cfg,
		Values: compactJSON(req.Values)}
	for env, raw := range req.ValuesByEnvironment {
		if s.ValuesByEnvironment == nil {
			s.ValuesByEnvironment = map[string]json.RawMessage{}
		}
		s.ValuesByEnvironment[env] = compactJSON(raw)
	}
	return s, nil
}

// compactJSON is raw without insignificant space, nil when it is empty or null: a Spec reads the
// same from a request and from the store.
func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil || b.Len() == 0 || b.String() == "null" {
		return nil
	}
	return b.Bytes()
}

// StoreInto sets the fields of a deployment that keep the request (strategy, config, values, bake
// window), as FromDeployment reads them back.
func (s *Spec) StoreInto(d *store.Deployment) error {
	d.OperatorName, d.Version, d.Strategy, d.Config, d.Values = s.Operator, s.Version, string(s.Strategy), s.Config, s.Values
	d.BakeWindow = s.BakeWindow
	d.ValuesByEnvironment, d.Analyses = nil, nil
	if len(s.ValuesByEnvironment) > 0 {
		b, err := json.Marshal(s.ValuesByEnvironment)
		if err != nil {
			return err
		}
		d.ValuesByEnvironment = b
	}
	if len(s.Analyses) > 0 {
		b, err := json.Marshal(s.Analyses)
		if err != nil {
			return err
		}
		d.Analyses = b
	}
	return nil
}

// ResolveAnalyses resolves the request's analyses into s.Analyses: stored templates read with
// templates and copied, inline ones parsed, args bound; stages name Canary stages. Errors are
// *invalid.Error naming the entry. Whether each target's Prometheus is configured is the
// caller's to check (it needs the store).
func (s *Spec) ResolveAnalyses(refs []api.AnalysisRef, templates analysis.TemplateSource) error {
	stages := 0
	if s.Canary != nil {
		stages = len(s.Canary.Stages)
	}
	planned, err := analysis.ResolveRefs(refs, templates, stages)
	if err != nil {
		return err
	}
	s.Analyses = planned
	if len(planned) == 0 {
		s.Analyses = nil
	}
	return nil
}
