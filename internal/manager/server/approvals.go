package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// maxComment bounds a decision's comment and a rollback's reason.
const maxComment = 2000

// approvalStatuses are the values of the status filter ("all": any status).
var approvalStatuses = []string{
	string(store.ApprovalPending), string(store.ApprovalApproved), string(store.ApprovalRejected),
	string(store.ApprovalExpired), "all",
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	status, err := oneOf(r, "status", approvalStatuses)
	switch {
	case err != nil:
		return err
	case status == "":
		status = string(store.ApprovalPending)
	case status == "all":
		status = ""
	}
	ctx := r.Context()
	list, err := s.store.ApprovalList(ctx, &store.ApprovalListParams{Status: store.ApprovalStatus(status),
		DeploymentID: r.URL.Query().Get("deploymentId"), Before: p.After, Limit: p.Limit})
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(list))
	for _, a := range list {
		ids = append(ids, a.DeploymentID)
	}
	notes, err := s.store.DeploymentMigrationNotesListMany(ctx, ids)
	if err != nil {
		return err
	}
	out := api.ApprovalList{Items: make([]api.DeploymentApproval, 0, len(list))}
	for _, a := range list {
		out.Items = append(out.Items, deploymentApprovalOut(a, notes[a.DeploymentID]))
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].ID)
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) approveApproval(w http.ResponseWriter, r *http.Request) error {
	return s.decideApproval(w, r, true)
}

func (s *Server) rejectApproval(w http.ResponseWriter, r *http.Request) error {
	return s.decideApproval(w, r, false)
}

// decideApproval records the caller's decision: the policy first (nobody decides their own
// request; the approval's role: 403 saying why), then the store, which refuses a decided or
// expired approval and a second decision by one person (409). Every attempt is in the audit
// log with its comment; a recorded decision wakes the engine so the deployment moves on.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request, approve bool) error {
	action := "approval.reject"
	if approve {
		action = "approval.approve"
	}
	var req api.DecisionRequest
	if err := s.decodeOptional(r, &req); err != nil {
		return err
	}
	comment := strings.TrimSpace(req.Comment)
	switch {
	case !approve && comment == "":
		return errInvalid("comment", "a rejection needs a comment saying why")
	case len(comment) > maxComment:
		return errInvalid("comment", "at most %d characters, not %d", maxComment, len(comment))
	}
	ctx, id := r.Context(), r.PathValue("id")
	a, err := s.store.ApprovalGetByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("approval", id)
	}
	if err != nil {
		return err
	}
	logCtx := s.approvalLogContext(ctx, a)
	entry := audit.Entry{Action: action, TargetKind: "approval", TargetName: a.ID,
		Details: map[string]any{"deploymentId": a.DeploymentID, "kind": a.Kind, "comment": comment}}
	identity, _ := auth.IdentityFrom(ctx)
	if err := approvals.MayDecideApproval(identity, a); err != nil {
		entry.Result = audit.Denied
		entry.Details["refused"] = err.Error()
		s.audit.Record(ctx, entry)
		var denied *approvals.DeniedError
		if errors.As(err, &denied) {
			return &Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: denied.Message,
				Details: map[string]any{"reason": denied.Reason}, Err: err}
		}
		return err
	}
	decided, err := s.store.ApprovalDecide(ctx, &store.ApprovalDecision{ApprovalID: a.ID, Actor: identity.Subject,
		Approve: approve, Comment: comment}, s.now().UTC())
	entry.Result = resultOf(err)
	if errors.Is(err, store.ErrConflict) {
		entry.Details["refused"] = toError(err).Message
	}
	if decided != nil {
		entry.Details["status"] = string(decided.Status)
	}
	s.audit.Record(ctx, entry)
	if err != nil {
		return err
	}
	s.rollouts.Wake()
	s.log.InfoContext(logCtx, "server: Approval decided", "approvalId", decided.ID, "approve", approve, "status", string(decided.Status))
	// The decision is recorded: a failure to read the notes only leaves them out of the answer.
	notes, err := s.store.DeploymentMigrationNotesListMany(ctx, []string{decided.DeploymentID})
	if err != nil {
		s.log.WarnContext(logCtx, "server: Migration notes could not be read", "error", err)
	}
	writeJSON(logCtx, s.log, w, http.StatusOK, deploymentApprovalOut(decided, notes[decided.DeploymentID]))
	return nil
}

// approvalLogContext is ctx whose lines are those of a's deployment, with the caller (who
// decides) as userId; the request's access log and error lines carry them too. It reads the
// deployment (one read per decision); when that fails, the lines still have every field, with
// only deploymentId known.
func (s *Server) approvalLogContext(ctx context.Context, a *store.Approval) context.Context {
	if d, err := s.store.DeploymentGetByID(ctx, a.DeploymentID); err == nil {
		return deploymentLogContext(ctx, d)
	}
	return deploymentLogContext(ctx, &store.Deployment{ID: a.DeploymentID, RequestedBy: a.RequestedBy})
}

// deploymentApprovalOut is an approval with its deployment's migration notes.
func deploymentApprovalOut(a *store.Approval, notes []*store.DeploymentMigrationNote) api.DeploymentApproval {
	out := api.DeploymentApproval{
		ID: a.ID, DeploymentID: a.DeploymentID, Kind: a.Kind, RequiredRole: a.RequiredRole, Required: a.Required,
		RequestedBy: a.RequestedBy, Status: string(a.Status), Reason: a.Reason, ExpiresAt: a.ExpiresAt,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, NotifiedAt: a.NotifiedAt, Decisions: make([]api.Decision, 0, len(a.Decisions)),
	}
	for _, d := range a.Decisions {
		dec := api.Decision{Actor: d.Actor, Decision: "reject", Comment: d.Comment, Time: d.At}
		if d.Approve {
			dec.Decision = "approve"
			out.Approvals++
		}
		out.Decisions = append(out.Decisions, dec)
	}
	for _, n := range notes {
		out.MigrationNotes = append(out.MigrationNotes, api.RevisionNote{CRD: n.CRDName, Version: n.Version, Digest: n.Digest,
			Note: api.MigrationNote{Text: n.Note.Text, URL: n.Note.URL}})
	}
	return out
}
