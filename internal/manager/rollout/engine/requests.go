package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/words"
)

// ConflictError is a request the deployment's state refuses (cancel a finished deployment,
// switch one that is not waiting for it) or a rule of the rollout (one active deployment per
// operator and cluster): a 409 at the API, with Message for people.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// Is makes a ConflictError match store.ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == store.ErrConflict }

func conflict(format string, args ...any) error {
	return &ConflictError{Message: fmt.Sprintf(format, args...)}
}

// Submit resolves req against the registered clusters (request.Resolve, once) and checks it
// against the operator's known versions, plans it, and stores it Queued: the engine
// admits it within the concurrency limit, plans it against the clusters and deploys it. Bad
// input is *invalid.Error naming the field; an operator already being deployed to one of the
// clusters is a *ConflictError. The validation and the plan are prepare's, which DryRun shares.
func (e *Engine) Submit(ctx context.Context, req *api.DeploymentRequest, requestedBy, requestID string) (*store.Deployment, error) {
	p, err := e.prepare(ctx, req, requestedBy, requestID)
	if err != nil {
		return nil, err
	}
	// The deployment and its first event commit together: its history never starts without it.
	created, err := store.WithTxV(ctx, e.cfg.Store, func(ctx context.Context, tx store.Tx) (*store.Deployment, error) {
		created, err := tx.DeploymentCreate(ctx, p.deployment)
		if err != nil {
			return nil, err
		}
		_, err = tx.DeploymentEventInsert(ctx, e.newEvent(created.ID, "created", "", fmt.Sprintf("%s %s to %s by %s, requested by %s",
			p.op.Name, p.spec.Version, words.Count(len(p.plan.Targets), "cluster"), p.spec.Strategy, requestedBy), map[string]any{"plan": p.plan.String()}))
		return created, err
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, e.activeConflict(ctx, p.op, p.plan.Targets)
	}
	if err != nil {
		return nil, err
	}
	e.Wake()
	return created, nil
}

// prepared is a request resolved and planned, and the deployment Submit stores for it.
type prepared struct {
	op         *store.Operator
	spec       *request.Spec
	plan       *strategy.Plan
	live       liveSet
	deployment *store.Deployment
}

// prepare resolves req and plans it without writing anything: what Submit stores and DryRun
// answers. Its errors are Submit's: *invalid.Error, *ConflictError, or a store's.
func (e *Engine) prepare(ctx context.Context, req *api.DeploymentRequest, requestedBy, requestID string) (*prepared, error) {
	known, err := e.knownTargets(ctx)
	if err != nil {
		return nil, err
	}
	spec, err := request.Resolve(req, known, request.Defaults{BakeWindow: max(e.cfg.BakeWindow, 0)})
	if err != nil {
		return nil, err
	}
	if err := e.resolveAnalyses(ctx, req, spec); err != nil {
		return nil, err
	}
	op, err := e.cfg.Store.OperatorGetByName(ctx, spec.Operator)
	if errors.Is(err, store.ErrNotFound) {
		return nil, invalid.Reasoned("operator", "notFound", nil, "no registered operator %q", spec.Operator)
	}
	if err != nil {
		return nil, err
	}
	versions, err := e.cfg.Store.OperatorVersionList(ctx, op.ID)
	if err != nil {
		return nil, err
	}
	if err := deployable(op, versions, spec.Version); err != nil {
		return nil, err
	}
	live, err := e.liveReleases(ctx, op)
	if err != nil {
		return nil, err
	}
	plan, err := strategy.NewPlan(spec, e.planOptions(op))
	if err != nil {
		return nil, err
	}
	if plan.Strategy == api.StrategyBlueGreen {
		if err := blueRequired(req, op, plan, live); err != nil {
			return nil, err
		}
	}
	if err := e.busyOn(ctx, op, spec.Targets); err != nil {
		return nil, err
	}
	d, err := e.deploymentOf(ctx, spec, op, plan, live, requestedBy, requestID)
	if err != nil {
		return nil, err
	}
	return &prepared{op: op, spec: spec, plan: plan, live: live, deployment: d}, nil
}

// deploymentOf is the Queued deployment of a planned request, each cluster with the release it
// installs (BlueGreen: green, beside blue's).
func (e *Engine) deploymentOf(ctx context.Context, spec *request.Spec, op *store.Operator, plan *strategy.Plan, live liveSet, requestedBy, requestID string) (*store.Deployment, error) {
	now := e.now()
	d := &store.Deployment{
		OperatorID: op.ID, Status: store.DeploymentQueued,
		Reason: fmt.Sprintf("queued: at most %d deployments run at once", e.cfg.MaxConcurrent), RequestedBy: requestedBy, RequestID: requestID,
		TraceContext: telemetry.TraceContext(ctx), // every step's operator.deploy is a child of the request's span
		CreatedAt:    now,                         // not due: admission (DeploymentAdmit) makes it due when a slot is free
	}
	if err := spec.StoreInto(d); err != nil {
		return nil, err
	}
	d.OperatorName = op.Name
	for _, t := range plan.Targets {
		loc := live.at(t.Name, op)
		c := &store.DeploymentCluster{
			ClusterName: t.Name, Environment: store.Environment(t.Environment), Stage: plan.StageOf(t.Name),
			Status: store.ClusterPending, Namespace: loc.Namespace, Release: loc.Release,
		}
		if plan.Strategy == api.StrategyBlueGreen {
			green := greenOf(loc, op, plan)
			c.BlueNamespace, c.BlueRelease = loc.Namespace, loc.Release
			c.Namespace, c.Release = green.Namespace, green.Release
		}
		d.Clusters = append(d.Clusters, c)
	}
	return d, nil
}

// blueRequired refuses a BlueGreen deployment to a cluster where the store knows the operator
// does not run (no live release): there is no blue to switch from. Planning checks the cluster
// itself again (a release removed since, blueGreenConfig.blueNamespace).
func blueRequired(req *api.DeploymentRequest, op *store.Operator, plan *strategy.Plan, live liveSet) error {
	for _, t := range plan.Targets {
		if live[t.Name] != nil {
			continue
		}
		field := "environments"
		if i := slices.Index(req.Clusters, t.Name); i >= 0 {
			field = fmt.Sprintf("clusters[%d]", i)
		}
		return invalid.Reasoned(field, "notInstalled", nil,
			"operator %q is not installed on cluster %q: BlueGreen switches from the running version (blue) to the new one; install it first with a Direct deployment (strategy Direct), then use BlueGreen", op.Name, t.Name)
	}
	return nil
}

// activeConflict names the cluster and deployment that refused a new one.
func (e *Engine) activeConflict(ctx context.Context, op *store.Operator, targets []request.Target) error {
	if err := e.busyOn(ctx, op, targets); errors.Is(err, store.ErrConflict) {
		return err
	}
	return conflict("operator %q already has an active deployment on one of the clusters", op.Name)
}

// busyOn is the *ConflictError naming an active deployment of op on one of targets, nil when
// there is none. It is read before anything is stored, so a dry run answers the 409 a real
// request gets; the store's unique index still decides between two requests racing.
func (e *Engine) busyOn(ctx context.Context, op *store.Operator, targets []request.Target) error {
	want := map[string]bool{}
	for _, t := range targets {
		want[t.Name] = true
	}
	p := &store.DeploymentListParams{OperatorID: op.ID, Active: true, Limit: 100}
	for {
		active, err := e.cfg.Store.DeploymentList(ctx, p)
		if err != nil {
			return err
		}
		for _, d := range active {
			for _, c := range d.Clusters {
				if c.Active && want[c.ClusterName] {
					return conflict("operator %q already has an active deployment on cluster %q: %s (%s); wait for it or cancel it", op.Name, c.ClusterName, d.ID, d.Status)
				}
			}
		}
		if len(active) < p.Limit {
			return nil
		}
		p.Before = active[len(active)-1].ID
	}
}

// Cancel asks a deployment to stop: one that has not started installing stops at once; one that
// is installing finishes the cluster installs in flight, starts no more, and ends Cancelled (the
// clusters keep what they run; roll back to undo it). History is kept.
func (e *Engine) Cancel(ctx context.Context, id, by string) (*store.Deployment, error) {
	d, err := e.request(ctx, id, func(d *store.Deployment) error {
		switch {
		case d.Status.Terminal():
			return conflict("deployment %s is %s: nothing to cancel", d.ID, d.Status)
		case d.Status == store.DeploymentRollingBack:
			return conflict("deployment %s is rolling back: a rollback is not cancelled (it restores the previous version)", d.ID)
		}
		d.CancelRequested = true
		return nil
	})
	if err == nil {
		e.event(ctx, id, "cancel.requested", "", "cancel requested by "+by, nil)
	}
	return d, err
}

// Rollback asks for a deployment to be rolled back to what each cluster ran before it (manual
// rollback, Admin): a running one stops and rolls back; a finished one (Completed, Cancelled, or
// Failed with clusters left on its version, such as a rollback that failed and is retried) is
// rolled back when it is still what its clusters run: a newer deployment live on one of them
// refuses it (roll that one back first).
func (e *Engine) Rollback(ctx context.Context, id, by, reason string) (*store.Deployment, error) {
	why := "manual rollback by " + by
	if reason = strings.TrimSpace(reason); reason != "" {
		why += ": " + reason
	}
	cur, err := e.cfg.Store.DeploymentGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if cur.Status.Terminal() {
		if err := e.stillLive(ctx, cur); err != nil {
			return nil, err
		}
	}
	d, err := e.request(ctx, id, func(d *store.Deployment) error {
		switch {
		case d.RollbackRequested || d.Status == store.DeploymentRollingBack:
			return conflict("deployment %s is already rolling back", d.ID)
		case d.Status.Terminal() && !leftOnVersion(d):
			return conflict("deployment %s is %s and no cluster runs its version: there is nothing of it to roll back", d.ID, d.Status)
		}
		d.RollbackRequested = true
		d.RollbackReason = why
		return nil
	})
	if err == nil {
		e.event(ctx, id, "rollback.requested", "", why, nil)
	}
	return d, err
}

// leftOnVersion reports whether a finished deployment left a cluster on its version.
func leftOnVersion(d *store.Deployment) bool {
	for _, c := range d.Clusters {
		if (c.HelmRevision > 0 || c.InstallAttempts > 0) && c.Status != store.ClusterRolledBack && c.Status != store.ClusterSkipped {
			return true
		}
	}
	return false
}

// stillLive refuses the rollback of a finished deployment that a newer one has replaced on one of
// its clusters: rolling it back would also undo the newer one.
func (e *Engine) stillLive(ctx context.Context, d *store.Deployment) error {
	live, err := e.cfg.Store.LiveReleaseList(ctx, &store.LiveReleaseListParams{OperatorName: d.OperatorName})
	if err != nil {
		return err
	}
	mine := map[string]bool{}
	for _, c := range d.Clusters {
		mine[c.ClusterName] = true
	}
	for _, r := range live {
		if mine[r.ClusterName] && r.DeploymentID != d.ID {
			newer, err := e.cfg.Store.DeploymentGetByID(ctx, r.DeploymentID)
			if err == nil && newer.CreatedAt.After(d.CreatedAt) {
				return conflict("cluster %q now runs %s %s from the newer deployment %s: roll that one back first", r.ClusterName, d.OperatorName, r.Version, r.DeploymentID)
			}
		}
	}
	return nil
}

// Switch lets a BlueGreen deployment with autoSwitch false switch to green once green is
// validated (before that, the request is remembered and the switch follows validation).
func (e *Engine) Switch(ctx context.Context, id, by string) (*store.Deployment, error) {
	d, err := e.request(ctx, id, func(d *store.Deployment) error {
		switch {
		case d.Strategy != string(api.StrategyBlueGreen):
			return conflict("deployment %s is %s: only BlueGreen deployments switch", d.ID, d.Strategy)
		case d.Status.Terminal() || d.Status == store.DeploymentRollingBack:
			return conflict("deployment %s is %s: nothing to switch", d.ID, d.Status)
		case d.SwitchedAt != nil || d.SwitchRequested:
			return conflict("deployment %s already switched (or was asked to)", d.ID)
		}
		d.SwitchRequested = true
		return nil
	})
	if err == nil {
		e.event(ctx, id, "switch.requested", "", "switch to green requested by "+by, nil)
	}
	return d, err
}

// request applies an API request to the deployment and makes it due now.
func (e *Engine) request(ctx context.Context, id string, fn func(d *store.Deployment) error) (*store.Deployment, error) {
	d, err := e.cfg.Store.DeploymentUpdate(ctx, id, func(d *store.Deployment) error {
		if err := fn(d); err != nil {
			return err
		}
		now := e.now()
		d.NextRunAt = &now
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.Wake()
	return d, nil
}

func hasVersion(vs []*store.OperatorVersion, v string) bool {
	for _, x := range vs {
		if x.Version == v {
			return true
		}
	}
	return false
}

func versionList(vs []*store.OperatorVersion) string {
	if len(vs) == 0 {
		return "none discovered"
	}
	out := make([]string, 0, 10)
	for i, v := range vs {
		if i == 10 {
			out = append(out, "…")
			break
		}
		out = append(out, v.Version)
	}
	return "known: " + strings.Join(out, ", ")
}
