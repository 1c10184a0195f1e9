package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Columns: id, deployment_id, kind, required_role, required, requested_by, status, reason,
// expires_at, created_at, updated_at, notified_at.
func scanApproval(row scanner) (*store.Approval, error) {
	a := store.Approval{Decisions: []*store.ApprovalDecision{}}
	err := row.Scan(&a.ID, &a.DeploymentID, &a.Kind, &a.RequiredRole, &a.Required, &a.RequestedBy,
		&a.Status, &a.Reason, timeDest{&a.ExpiresAt}, timeDest{&a.CreatedAt}, timeDest{&a.UpdatedAt},
		nullTimeDest{&a.NotifiedAt})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// Columns: approval_id, actor, approve, comment, at.
func scanApprovalDecision(row scanner) (*store.ApprovalDecision, error) {
	var d store.ApprovalDecision
	if err := row.Scan(&d.ApprovalID, &d.Actor, &d.Approve, &d.Comment, timeDest{&d.At}); err != nil {
		return nil, err
	}
	return &d, nil
}

// withDecisions fills the decisions of as (oldest first) in one query.
func (e *executor) withDecisions(ctx context.Context, as []*store.Approval) error {
	return attach(ctx, e, as, func(a *store.Approval) string { return a.ID }, "ApprovalDecisionListMany",
		"list approval decisions", scanApprovalDecision,
		func(d *store.ApprovalDecision) string { return d.ApprovalID },
		func(a *store.Approval, d *store.ApprovalDecision) { a.Decisions = append(a.Decisions, d) })
}

// ApprovalCreate inserts a pending approval without decisions. An empty ID gets a new UUID,
// Required below 1 is 1, a zero CreatedAt is now; Kind, RequestedBy and ExpiresAt are required;
// NotifiedAt is stored as given (normally nil). An unknown deployment is ErrNotFound, a taken id ErrAlreadyExists.
func (e *executor) ApprovalCreate(ctx context.Context, a *store.Approval) (*store.Approval, error) {
	raw := a.ID
	if raw == "" {
		raw = uuid.NewString()
	}
	id, ok := normalizeID(raw)
	if !ok {
		return nil, fmt.Errorf("create approval: id %q is not a UUID", a.ID)
	}
	depID, ok := normalizeID(a.DeploymentID)
	if !ok {
		return nil, fmt.Errorf("deployment %q: %w", a.DeploymentID, store.ErrNotFound)
	}
	switch {
	case a.Kind == "":
		return nil, fmt.Errorf("create approval %s: empty kind", id)
	case a.RequestedBy == "":
		return nil, fmt.Errorf("create approval %s: empty requester", id)
	case a.ExpiresAt.IsZero():
		return nil, fmt.Errorf("create approval %s: no expiry", id)
	case a.Status != "" && a.Status != store.ApprovalPending:
		return nil, fmt.Errorf("create approval %s: status %q, want pending", id, a.Status)
	case len(a.Decisions) > 0:
		return nil, fmt.Errorf("create approval %s: created with decisions", id)
	}
	out, err := scanApproval(e.w.QueryRowContext(ctx, e.q("ApprovalInsert"), id, depID, a.Kind,
		a.RequiredRole, max(a.Required, 1), a.RequestedBy, a.Reason, e.ts(a.ExpiresAt), e.ts(a.CreatedAt),
		e.tsPtr(a.NotifiedAt)))
	if err != nil {
		err = e.mapErr(err)
		if errors.Is(err, ErrForeignKey) {
			return nil, fmt.Errorf("deployment %s: %w", depID, store.ErrNotFound)
		}
		return nil, fmt.Errorf("create approval %s: %w", id, err)
	}
	return out, nil
}

// ApprovalGetByID returns the approval with its decisions.
func (e *executor) ApprovalGetByID(ctx context.Context, id string) (*store.Approval, error) {
	nid, ok := normalizeID(id)
	if !ok {
		return nil, fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	return e.approvalGet(ctx, "ApprovalGet", nid)
}

// approvalGet runs ApprovalGet (on r) or ApprovalGetForUpdate (on w, for the lock), then the
// decisions.
func (e *executor) approvalGet(ctx context.Context, query, id string) (*store.Approval, error) {
	q := e.r
	if query == "ApprovalGetForUpdate" {
		q = e.w
	}
	a, err := scanApproval(q.QueryRowContext(ctx, e.q(query), id))
	if err != nil {
		return nil, fmt.Errorf("approval %s: %w", id, e.mapErr(err))
	}
	if err := e.withDecisions(ctx, []*store.Approval{a}); err != nil {
		return nil, err
	}
	return a, nil
}

// ApprovalList returns a page of approvals, newest first, each with its decisions; p.Unnotified
// keeps those whose mail has not been sent.
func (e *executor) ApprovalList(ctx context.Context, p *store.ApprovalListParams) ([]*store.Approval, error) {
	l := newListQuery()
	if p.Status != "" {
		l.where("a.status = ?", string(p.Status))
	}
	if p.DeploymentID != "" {
		id, ok := normalizeID(p.DeploymentID)
		if !ok {
			return []*store.Approval{}, nil
		}
		l.where("a.deployment_id = ?", id)
	}
	if p.Unnotified {
		l.conds = append(l.conds, "a.notified_at IS NULL")
	}
	if p.Before != "" {
		id, ok := normalizeID(p.Before)
		if !ok {
			return []*store.Approval{}, nil
		}
		l.where("(a.created_at, a.id) < (SELECT created_at, id FROM approvals WHERE id = ?)", id)
	}
	q, args := l.build(e.q("ApprovalList"), store.NormalizeLimit(p.Limit))
	as, err := queryList(ctx, e, q, args, "list approvals", scanApproval)
	if err != nil {
		return nil, err
	}
	if err := e.withDecisions(ctx, as); err != nil {
		return nil, err
	}
	return as, nil
}

// ApprovalDecide records d (at now) on a pending, unexpired approval, locked for the decision:
// any rejection makes it rejected, Required approvals by distinct people approved. A decided or
// expired approval, a second decision by one actor, or the requester's own decision is
// ErrConflict; an unknown approval ErrNotFound. It returns the approval with its decisions.
func (e *executor) ApprovalDecide(ctx context.Context, d *store.ApprovalDecision, now time.Time) (*store.Approval, error) {
	id, ok := normalizeID(d.ApprovalID)
	if !ok {
		return nil, fmt.Errorf("approval %q: %w", d.ApprovalID, store.ErrNotFound)
	}
	if d.Actor == "" {
		return nil, fmt.Errorf("decide approval %s: empty actor", id)
	}
	now = normTime(now)
	var out *store.Approval
	err := e.atomic(ctx, func(ex *executor) error {
		a, err := ex.approvalGet(ctx, "ApprovalGetForUpdate", id)
		if err != nil {
			return err
		}
		switch {
		case a.Status != store.ApprovalPending:
			return fmt.Errorf("approval %s is %s: %w", id, a.Status, store.ErrConflict)
		case !now.Before(a.ExpiresAt):
			return fmt.Errorf("approval %s expired at %s: %w", id, a.ExpiresAt.Format(time.RFC3339), store.ErrConflict)
		case d.Actor == a.RequestedBy:
			return fmt.Errorf("approval %s: %s may not decide their own request: %w", id, d.Actor, store.ErrConflict)
		}
		approvals := 0
		for _, prev := range a.Decisions {
			if prev.Actor == d.Actor {
				return fmt.Errorf("approval %s: %s has already decided: %w", id, d.Actor, store.ErrConflict)
			}
			if prev.Approve {
				approvals++
			}
		}
		_, err = ex.w.ExecContext(ctx, ex.q("ApprovalDecisionInsert"), id, d.Actor, d.Approve, d.Comment, ex.d.TimeArg(now))
		if err != nil {
			err = ex.mapErr(err)
			if errors.Is(err, store.ErrAlreadyExists) {
				return fmt.Errorf("approval %s: %s has already decided: %w", id, d.Actor, store.ErrConflict)
			}
			return fmt.Errorf("decide approval %s: %w", id, err)
		}
		status := store.ApprovalPending
		switch {
		case !d.Approve:
			status = store.ApprovalRejected
		case approvals+1 >= a.Required:
			status = store.ApprovalApproved
		}
		if _, err := ex.w.ExecContext(ctx, ex.q("ApprovalSetStatus"), id, string(status), ex.d.TimeArg(now)); err != nil {
			return fmt.Errorf("decide approval %s: %w", id, ex.mapErr(err))
		}
		out, err = ex.approvalGet(ctx, "ApprovalGet", id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ApprovalExpire moves every pending approval whose expiry is not after now to expired and
// returns them, by expiry, with the decisions they had (a decision and the expiry serialize on
// the row, so none lands on an expired approval).
func (e *executor) ApprovalExpire(ctx context.Context, now time.Time) ([]*store.Approval, error) {
	var out []*store.Approval
	err := e.atomic(ctx, func(ex *executor) error {
		rows, err := ex.w.QueryContext(ctx, ex.q("ApprovalExpire"), ex.ts(now))
		if err != nil {
			return fmt.Errorf("expire approvals: %w", ex.mapErr(err))
		}
		defer func() { _ = rows.Close() }()
		out = []*store.Approval{}
		for rows.Next() {
			a, err := scanApproval(rows)
			if err != nil {
				return fmt.Errorf("expire approvals: %w", err)
			}
			out = append(out, a)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("expire approvals: %w", ex.mapErr(err))
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("expire approvals: %w", err)
		}
		slices.SortFunc(out, func(a, b *store.Approval) int {
			return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
		})
		return ex.withDecisions(ctx, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ApprovalMarkNotified records when the approval's mail was sent (UpdatedAt stays: the request
// itself did not change). An unknown approval is ErrNotFound.
func (e *executor) ApprovalMarkNotified(ctx context.Context, id string, at time.Time) error {
	nid, ok := normalizeID(id)
	if !ok {
		return fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	res, err := e.w.ExecContext(ctx, e.q("ApprovalMarkNotified"), nid, e.ts(at))
	if err != nil {
		return fmt.Errorf("mark approval %s notified: %w", nid, e.mapErr(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("mark approval %s notified: %w", nid, err)
	} else if n == 0 {
		return fmt.Errorf("approval %s: %w", nid, store.ErrNotFound)
	}
	return nil
}
