package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// deploymentStatuses are the values of the status filter.
var deploymentStatuses = func() []string {
	out := make([]string, len(store.DeploymentStatuses))
	for i, st := range store.DeploymentStatuses {
		out[i] = string(st)
	}
	return out
}()

// createDeployment decodes the design's body as it is (api.DecodeDeploymentRequest: strict, errors with the
// JSON path), and hands it to the engine, which validates it against the registered clusters and
// versions and stores it Queued: 202 with the deployment. With dryRun=true it answers the plan
// instead (dryRunDeployment).
func (s *Server) createDeployment(w http.ResponseWriter, r *http.Request) error {
	dryRun, err := oneOf(r, "dryRun", []string{"true", "false"})
	if err != nil {
		return err
	}
	body, err := s.readBody(r, min(s.cfg.MaxBodyBytes, api.MaxBody))
	if err != nil {
		return err
	}
	ctx := r.Context()
	req, err := api.DecodeDeploymentRequest(body)
	if dryRun == "true" {
		return s.dryRunDeployment(w, r, req, err)
	}
	var d *store.Deployment
	if err == nil {
		d, err = s.rollouts.Submit(ctx, req, caller(ctx), telemetry.RequestID(ctx))
	}
	entry := audit.Entry{Action: "deployment.create", TargetKind: "deployment", Result: resultOf(err), Details: map[string]any{}}
	if req != nil {
		entry.TargetName = req.Operator
		entry.Details["operator"], entry.Details["version"], entry.Details["strategy"] = req.Operator, req.Version, string(req.Strategy)
	}
	if e, ok := invalid.As(err); ok {
		entry.Details["field"], entry.Details["reason"] = e.Field, e.Reason
	}
	if d != nil {
		entry.TargetName = d.ID
		entry.Details["clusters"] = len(d.Clusters)
	}
	s.audit.Record(ctx, entry)
	if err != nil {
		return err
	}
	logCtx := deploymentLogContext(ctx, d)
	s.log.InfoContext(logCtx, "server: Deployment submitted", "strategy", d.Strategy, "clusters", len(d.Clusters))
	writeJSON(logCtx, s.log, w, http.StatusAccepted, deploymentOut(d))
	return nil
}

// dryRunDeployment answers POST /deployments?dryRun=true: the engine's DryRun validates the
// request as a real POST does (the same errors) and plans it as the engine would, and the
// answer is 200 with the plan. Nothing is stored: no deployment, no event, no audit entry.
func (s *Server) dryRunDeployment(w http.ResponseWriter, r *http.Request, req *api.DeploymentRequest, decodeErr error) error {
	if decodeErr != nil {
		return decodeErr
	}
	ctx := r.Context()
	plan, err := s.rollouts.DryRun(ctx, req, caller(ctx), telemetry.RequestID(ctx))
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "server: Deployment dry run", "operatorName", plan.Operator, "version", plan.Version,
		"strategy", plan.Strategy, "clusters", len(plan.Clusters), "wouldFail", plan.WouldFail != "")
	writeJSON(ctx, s.log, w, http.StatusOK, plan)
	return nil
}

func (s *Server) listDeployments(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	status, err := oneOf(r, "status", deploymentStatuses)
	if err != nil {
		return err
	}
	active, err := oneOf(r, "active", []string{"true", "false"})
	if err != nil {
		return err
	}
	ctx := r.Context()
	params := &store.DeploymentListParams{Status: store.DeploymentStatus(status), Active: active == "true", Before: p.After, Limit: p.Limit}
	out := api.DeploymentList{Items: []api.Deployment{}}
	if name := r.URL.Query().Get("operator"); name != "" {
		op, err := s.store.OperatorGetByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			// No such operator: no deployments of it.
			writeJSON(ctx, s.log, w, http.StatusOK, out)
			return nil
		}
		if err != nil {
			return err
		}
		params.OperatorID = op.ID
	}
	list, err := s.store.DeploymentList(ctx, params)
	if err != nil {
		return err
	}
	// What each waits for: one approvals read and one queue read for the page, when needed.
	if out.Items, err = s.deploymentsOut(ctx, list); err != nil {
		return err
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].ID)
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) getDeployment(w http.ResponseWriter, r *http.Request) error {
	d, err := s.deploymentByID(r)
	if err != nil {
		return err
	}
	out, err := s.deploymentsOut(r.Context(), []*store.Deployment{d})
	if err != nil {
		return err
	}
	if out[0].AnalysisRuns, err = s.analysisRunsOf(r.Context(), d); err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out[0])
	return nil
}

// cancelDeployment asks the engine to stop the deployment (history is kept): 202, as the engine
// stops it at its next step.
func (s *Server) cancelDeployment(w http.ResponseWriter, r *http.Request) error {
	return s.deploymentRequest(w, r, "deployment.cancel", nil, func(ctx context.Context, id, by string) (*store.Deployment, error) {
		return s.rollouts.Cancel(ctx, id, by)
	})
}

// rollbackDeployment asks for a manual rollback (Admin), with an optional reason.
func (s *Server) rollbackDeployment(w http.ResponseWriter, r *http.Request) error {
	var req api.RollbackRequest
	details, err := s.decodeReason(r, &req, &req.Reason)
	if err != nil {
		return err
	}
	return s.deploymentRequest(w, r, "deployment.rollback", details, func(ctx context.Context, id, by string) (*store.Deployment, error) {
		return s.rollouts.Rollback(ctx, id, by, req.Reason)
	})
}

// switchDeployment lets a BlueGreen deployment with autoSwitch false switch to green.
func (s *Server) switchDeployment(w http.ResponseWriter, r *http.Request) error {
	return s.deploymentRequest(w, r, "deployment.switch", nil, func(ctx context.Context, id, by string) (*store.Deployment, error) {
		return s.rollouts.Switch(ctx, id, by)
	})
}

// pauseDeployment pauses a deployment (Operator, Admin), with an optional reason: the cluster
// step under way finishes and no new one starts, on any replica, until it is resumed.
func (s *Server) pauseDeployment(w http.ResponseWriter, r *http.Request) error {
	var req api.PauseRequest
	details, err := s.decodeReason(r, &req, &req.Reason)
	if err != nil {
		return err
	}
	return s.deploymentRequest(w, r, "deployment.pause", details, func(ctx context.Context, id, by string) (*store.Deployment, error) {
		return s.rollouts.Pause(ctx, id, by, req.Reason)
	})
}

// resumeDeployment lets a paused deployment go on.
func (s *Server) resumeDeployment(w http.ResponseWriter, r *http.Request) error {
	return s.deploymentRequest(w, r, "deployment.resume", nil, func(ctx context.Context, id, by string) (*store.Deployment, error) {
		return s.rollouts.Resume(ctx, id, by)
	})
}

// decodeReason decodes a request's optional body into req, whose reason field is at reason,
// checks the reason's length, and returns the audit details that carry it.
func (s *Server) decodeReason(r *http.Request, req any, reason *string) (map[string]any, error) {
	if err := s.decodeOptional(r, req); err != nil {
		return nil, err
	}
	if len(*reason) > maxComment {
		return nil, errInvalid("reason", "at most %d characters, not %d", maxComment, len(*reason))
	}
	details := map[string]any{}
	if *reason != "" {
		details["reason"] = *reason
	}
	return details, nil
}

// deploymentRequest runs one of the engine's requests on the deployment of the path, records it
// in the audit log, and answers 202 with the deployment; 404 for an unknown deployment, 409 when
// its state refuses the request.
func (s *Server) deploymentRequest(w http.ResponseWriter, r *http.Request, action string, details map[string]any,
	do func(ctx context.Context, id, by string) (*store.Deployment, error)) error {
	ctx, id := r.Context(), r.PathValue("id")
	d, err := do(ctx, id, caller(ctx))
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("deployment", id)
	}
	if err != nil {
		// Refused: the lines of the refusal are the deployment's too (one read, on refusals only).
		if cur, rerr := s.store.DeploymentGetByID(ctx, id); rerr == nil {
			deploymentLogContext(ctx, cur)
		}
	}
	entry := audit.Entry{Action: action, TargetKind: "deployment", TargetName: id, Result: resultOf(err), Details: details}
	if errors.Is(err, store.ErrConflict) {
		if entry.Details == nil {
			entry.Details = map[string]any{}
		}
		entry.Details["refused"] = toError(err).Message
	}
	s.audit.Record(ctx, entry)
	if err != nil {
		return err
	}
	logCtx := deploymentLogContext(ctx, d)
	s.log.InfoContext(logCtx, "server: Deployment request accepted", "action", action, "status", string(d.Status))
	out, err := s.deploymentsOut(ctx, []*store.Deployment{d})
	if err != nil {
		return err
	}
	writeJSON(logCtx, s.log, w, http.StatusAccepted, out[0])
	return nil
}

func (s *Server) getRollbackStatus(w http.ResponseWriter, r *http.Request) error {
	d, err := s.deploymentByID(r)
	if err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, rollbackStatusOf(d, s.now()))
	return nil
}

// rollbackStatusOf reads a deployment's rollback: notStarted until one is asked for or begins,
// inProgress while requested or RollingBack, then rolledBack or failed.
func rollbackStatusOf(d *store.Deployment, now time.Time) api.RollbackStatus {
	out := api.RollbackStatus{DeploymentID: d.ID, Status: api.RollbackNotStarted, Reason: d.RollbackReason,
		StartedAt: d.RollbackStartedAt, FinishedAt: d.RollbackFinishedAt, Clusters: []api.RollbackCluster{}}
	started := d.RollbackRequested || d.RollbackStartedAt != nil || d.Status == store.DeploymentRollingBack
	switch {
	case d.Status == store.DeploymentRolledBack:
		out.Status = api.RollbackRolledBack
	case started && d.Status == store.DeploymentFailed:
		out.Status = api.RollbackFailed
	case started:
		// Running, or asked of a Completed deployment and not taken up yet.
		out.Status = api.RollbackInProgress
	}
	if out.Status == api.RollbackRolledBack && out.FinishedAt == nil {
		out.FinishedAt = d.FinishedAt
	}
	if d.RollbackStartedAt != nil {
		end := now
		if out.FinishedAt != nil {
			end = *out.FinishedAt
		}
		secs := end.Sub(*d.RollbackStartedAt).Seconds()
		out.DurationSeconds = &secs
	}
	if out.Status == api.RollbackNotStarted {
		return out
	}
	for _, c := range d.Clusters {
		out.Clusters = append(out.Clusters, api.RollbackCluster{ClusterName: c.ClusterName, Status: string(c.Status),
			FromVersion: d.Version, ToVersion: c.PreviousVersion, ToRevision: c.PreviousRevision, Message: c.Message})
	}
	return out
}

// deploymentByID reads the deployment of the path, and notes it as what the request is about
// (deploymentLogContext).
func (s *Server) deploymentByID(r *http.Request) (*store.Deployment, error) {
	id := r.PathValue("id")
	d, err := s.store.DeploymentGetByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNotFound("deployment", id)
	}
	if err == nil {
		deploymentLogContext(r.Context(), d)
	}
	return d, err
}

// caller is the subject of the request's identity.
func caller(ctx context.Context) string {
	if id, ok := auth.IdentityFrom(ctx); ok {
		return id.Subject
	}
	return ""
}

func deploymentOut(d *store.Deployment) api.Deployment {
	out := api.Deployment{
		ID: d.ID, Operator: d.OperatorName, Version: d.Version, Strategy: d.Strategy, Config: d.Config,
		Values: d.Values, ValuesByEnvironment: d.ValuesByEnvironment, BakeWindow: api.FormatDuration(d.BakeWindow), Status: string(d.Status), Reason: d.Reason,
		RequestedBy: d.RequestedBy, RequestID: d.RequestID, Stage: d.Stage, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
		StartedAt: d.StartedAt, FinishedAt: d.FinishedAt, CancelRequested: d.CancelRequested,
		RollbackRequested: d.RollbackRequested, SwitchRequested: d.SwitchRequested, RollbackReason: d.RollbackReason,
		SwitchedAt: d.SwitchedAt, BlueDeleteAt: d.BlueDeleteAt, Clusters: make([]api.DeploymentCluster, 0, len(d.Clusters)),
		Paused: d.PausedAt != nil, PausedAt: d.PausedAt, PausedBy: d.PausedBy, PauseReason: d.PauseReason,
		StageStartedAt: d.StageStartedAt,
	}
	if len(out.Config) == 0 {
		out.Config = []byte("{}")
	}
	for _, c := range d.Clusters {
		out.Clusters = append(out.Clusters, api.DeploymentCluster{
			Name: c.ClusterName, Environment: string(c.Environment), Stage: c.Stage, Status: string(c.Status),
			HelmRevision: c.HelmRevision, PreviousRevision: c.PreviousRevision, PreviousVersion: c.PreviousVersion,
			Message: c.Message, Namespace: c.Namespace, Release: c.Release, BlueNamespace: c.BlueNamespace,
			BlueRelease: c.BlueRelease, InstallAttempts: c.InstallAttempts, UpdatedAt: c.UpdatedAt,
		})
	}
	return out
}

// deploymentLogContext is ctx whose log lines are d's: they carry the design's log fields, with
// the caller of this request as userId (the user who asked for the action, whoever requested
// the deployment; d's requester only without an authenticated caller). It notes d as what the
// request is about, so that its access log line and its error lines carry d's fields too.
func deploymentLogContext(ctx context.Context, d *store.Deployment) context.Context {
	dep := telemetry.Deployment{ID: d.ID, Operator: d.OperatorName, Version: d.Version, UserID: d.RequestedBy}
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.deployment = &dep
	}
	return telemetry.WithDeployment(ctx, dep)
}

// notedLogContext is ctx with the deployment the request noted, if any: for a line written
// outside the handler (an error, the access log).
func notedLogContext(ctx context.Context) context.Context {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok && info.deployment != nil {
		if _, has := telemetry.DeploymentOf(ctx); !has {
			return telemetry.WithDeployment(ctx, *info.deployment)
		}
	}
	return ctx
}
