package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

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
	Name     string        `json:"name"`
	Status   string        `json:"status" enum:"new,unchanged,compatible,breaking" description:"new: the cluster has no such CRD; breaking: a change refuses objects the old definition accepted"`
	Approved bool          `json:"approved,omitempty" description:"the breaking change was approved through POST /crds/{name}/approve"`
	Changes  []crds.Change `json:"changes"`
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

// DryRun validates and plans req exactly as Submit and the planning step would (the same
// functions: prepare, then assess) and answers the plan; it stores nothing and changes no
// cluster. Its errors are Submit's: bad input is *invalid.Error, an operator already being
// deployed to one of the clusters a *ConflictError. What would fail the deployment at planning
// (an unreachable cluster, a chart that cannot be fetched) is WouldFail, not an error.
func (e *Engine) DryRun(ctx context.Context, req *request.Request, requestedBy, requestID string) (*DryRun, error) {
	p, err := e.prepare(ctx, req, requestedBy, requestID)
	if err != nil {
		return nil, err
	}
	sink := &eventSink{}
	ctx = context.WithValue(ctx, eventSinkKey{}, sink)
	parent := trace.SpanFromContext(ctx)
	ctx, span := telemetry.Tracer().Start(ctx, telemetry.SpanOperatorValidate)
	defer span.End()
	a, err := e.assess(ctx, parent, p.deployment, p.op, p.plan, p.spec)
	if err != nil {
		return nil, err
	}
	out := &DryRun{DryRun: true, Operator: p.op.Name, Version: p.spec.Version, Strategy: string(p.spec.Strategy),
		Config: p.deployment.Config, BakeWindow: request.FormatDuration(p.spec.BakeWindow), Stages: stagesOf(p.plan), AlreadyRunning: []string{}, Approvals: []DryRunApproval{},
		WouldFail: a.failure, Events: sink.dryRun()}
	if len(out.Config) == 0 {
		out.Config = json.RawMessage("{}")
	}
	for _, c := range p.deployment.Clusters {
		dc := DryRunCluster{Name: c.ClusterName, Environment: string(c.Environment), Stage: c.Stage, Namespace: c.Namespace,
			Release: c.Release, BlueNamespace: c.BlueNamespace, BlueRelease: c.BlueRelease, Problem: a.problems[c.ClusterName],
			CRDs: crdsOf(a.crds[c.ClusterName], a.approvedCRDs)}
		if r := p.live[c.ClusterName]; r != nil {
			dc.InstalledVersion, dc.RunsVersion = r.Version, r.Version == p.spec.Version
		}
		if dc.RunsVersion {
			out.AlreadyRunning = append(out.AlreadyRunning, c.ClusterName)
		}
		out.Clusters = append(out.Clusters, dc)
	}
	if a.failure == "" {
		for _, r := range a.requirements {
			out.Approvals = append(out.Approvals, DryRunApproval{Kind: r.Kind, RequiredRole: r.RequiredRole, Required: r.Count, Reason: r.Reason})
		}
	}
	return out, nil
}

// stagesOf is the plan's stages as a dry run shows them.
func stagesOf(plan *strategy.Plan) []DryRunStage {
	out := make([]DryRunStage, 0, len(plan.Stages))
	for _, st := range plan.Stages {
		s := DryRunStage{Index: st.Index, Kind: string(st.Kind), Environment: st.Environment, Clusters: slices.Clone(st.Clusters),
			Parallel: st.Parallel, Percentage: st.Percentage, Hold: request.FormatDuration(st.Hold),
			SuccessThreshold: st.SuccessThreshold, HealthChecks: st.HealthChecks, WaitForSwitch: st.WaitForSwitch}
		if st.Pause > 0 {
			s.PauseAfter = request.FormatDuration(st.Pause)
		}
		out = append(out, s)
	}
	return out
}

// crdsOf is a cluster's CRD comparisons as a dry run shows them.
func crdsOf(checks []crdCheck, approved []string) []DryRunCRD {
	out := make([]DryRunCRD, 0, len(checks))
	for _, c := range checks {
		r := DryRunCRD{Name: c.Name, Status: "new", Changes: []crds.Change{}}
		switch {
		case c.Report == nil:
		case c.Report.Breaking():
			r.Status, r.Approved = "breaking", slices.Contains(approved, c.Name)
		case len(c.Report.Changes) == 0:
			r.Status = "unchanged"
		default:
			r.Status = "compatible"
		}
		if c.Report != nil && len(c.Report.Changes) > 0 {
			r.Changes = c.Report.Changes
		}
		out = append(out, r)
	}
	return out
}

// eventSink collects the events of a dry run instead of storing them (Engine.event).
type eventSink struct {
	mu     sync.Mutex
	events []*store.DeploymentEvent
}

type eventSinkKey struct{}

func (s *eventSink) add(ev *store.DeploymentEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
}

func (s *eventSink) dryRun() []DryRunEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DryRunEvent, 0, len(s.events))
	for _, ev := range s.events {
		out = append(out, DryRunEvent{Type: ev.Type, Cluster: ev.Cluster, Message: ev.Message})
	}
	return out
}
