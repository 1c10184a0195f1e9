package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// DryRun validates and plans req exactly as Submit and the planning step would (the same
// functions: prepare, then assess) and answers the plan; it stores nothing and changes no
// cluster. Its errors are Submit's: bad input is *invalid.Error, an operator already being
// deployed to one of the clusters a *ConflictError. What would fail the deployment at planning
// (an unreachable cluster, a chart that cannot be fetched) is WouldFail, not an error.
func (e *Engine) DryRun(ctx context.Context, req *api.DeploymentRequest, requestedBy, requestID string) (*api.DryRun, error) {
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
	out := &api.DryRun{DryRun: true, Operator: p.op.Name, Version: p.spec.Version, Strategy: string(p.spec.Strategy),
		Config: p.deployment.Config, BakeWindow: api.FormatDuration(p.spec.BakeWindow), Stages: stagesOf(p.plan), AlreadyRunning: []string{}, Approvals: []api.DryRunApproval{},
		WouldFail: a.failure, Events: sink.dryRun()}
	if len(out.Config) == 0 {
		out.Config = json.RawMessage("{}")
	}
	for _, c := range p.deployment.Clusters {
		dc := api.DryRunCluster{Name: c.ClusterName, Environment: string(c.Environment), Stage: c.Stage, Namespace: c.Namespace,
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
			out.Approvals = append(out.Approvals, api.DryRunApproval{Kind: r.Kind, RequiredRole: r.RequiredRole, Required: r.Count, Reason: r.Reason})
		}
	}
	return out, nil
}

// stagesOf is the plan's stages as a dry run shows them.
func stagesOf(plan *strategy.Plan) []api.DryRunStage {
	out := make([]api.DryRunStage, 0, len(plan.Stages))
	for _, st := range plan.Stages {
		s := api.DryRunStage{Index: st.Index, Kind: string(st.Kind), Environment: st.Environment, Clusters: slices.Clone(st.Clusters),
			Parallel: st.Parallel, Percentage: st.Percentage, Hold: api.FormatDuration(st.Hold),
			SuccessThreshold: st.SuccessThreshold, HealthChecks: st.HealthChecks, WaitForSwitch: st.WaitForSwitch}
		if st.Pause > 0 {
			s.PauseAfter = api.FormatDuration(st.Pause)
		}
		out = append(out, s)
	}
	return out
}

// crdsOf is a cluster's CRD comparisons as a dry run shows them.
func crdsOf(checks []crdCheck, approved []string) []api.DryRunCRD {
	out := make([]api.DryRunCRD, 0, len(checks))
	for _, c := range checks {
		r := api.DryRunCRD{Name: c.Name, Status: "new", Changes: []api.SchemaChange{}}
		switch {
		case c.Report == nil:
		case c.Report.Breaking():
			r.Status, r.Approved = "breaking", slices.Contains(approved, c.Name)
		case len(c.Report.Changes) == 0:
			r.Status = "unchanged"
		default:
			r.Status = "compatible"
		}
		if c.Report != nil {
			r.Changes = append(r.Changes, schemaChanges(c.Report.Changes)...)
		}
		out = append(out, r)
	}
	return out
}

// schemaChanges are the checker's changes as the API shows them.
func schemaChanges(cs []crds.Change) []api.SchemaChange {
	out := make([]api.SchemaChange, len(cs))
	for i, c := range cs {
		out[i] = api.SchemaChange{Path: c.Path, Kind: c.Kind, Version: c.Version, Breaking: c.Breaking, Message: c.Message}
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

func (s *eventSink) dryRun() []api.DryRunEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.DryRunEvent, 0, len(s.events))
	for _, ev := range s.events {
		out = append(out, api.DryRunEvent{Type: ev.Type, Cluster: ev.Cluster, Message: ev.Message})
	}
	return out
}
