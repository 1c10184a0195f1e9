package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/words"
)

// mailPending queues the mail of every pending approval not mailed yet (the notifier ignores
// one already queued); the leader does it, so an approval is not mailed by two replicas. An approval is marked once its mail is delivered or given up (MailResult);
// mail dropped by a stopping replica stays unmarked and the next leader sends it.
func (e *Engine) mailPending(ctx context.Context) {
	if e.cfg.Notifier == nil {
		return
	}
	list, err := e.cfg.Store.ApprovalList(ctx, &store.ApprovalListParams{Status: store.ApprovalPending, Unnotified: true, Limit: 100})
	if err != nil {
		e.logErr(ctx, "listing approvals to mail", err)
		return
	}
	ids := make([]string, 0, len(list))
	for _, a := range list {
		ids = append(ids, a.DeploymentID)
	}
	notes, err := e.cfg.Store.DeploymentMigrationNotesListMany(ctx, ids)
	if err != nil {
		e.logErr(ctx, "listing the migration notes of approvals to mail", err)
		return
	}
	for _, a := range list {
		d, err := e.cfg.Store.DeploymentGetByID(ctx, a.DeploymentID)
		if err != nil {
			continue
		}
		p := notify.PendingOf(a, d)
		p.MigrationNotes = notes[a.DeploymentID]
		if err := e.cfg.Notifier.Enqueue(p); err != nil {
			e.logErr(logContext(ctx, d), "queueing the mail of approval "+a.ID, err)
		}
	}
}

// MailResult records what became of an approval's mail (the notifier's OnResult): delivered or
// given up marks the approval mailed, with an event on its deployment; dropped at stop leaves
// it for the next replica.
func (e *Engine) MailResult(r notify.Result) {
	if errors.Is(r.Err, notify.ErrStopped) {
		return
	}
	ctx := context.Background()
	msg := fmt.Sprintf("approval %s mailed to %s", r.Pending.ApprovalID, strings.Join(r.To, ", "))
	typ := "approval.mailed"
	if r.Err != nil {
		typ, msg = "approval.mailFailed", fmt.Sprintf("approval %s: mail failed after %s: %v", r.Pending.ApprovalID, words.Count(r.Attempts, "attempt"), r.Err)
	}
	if err := e.cfg.Store.ApprovalMarkNotified(ctx, r.Pending.ApprovalID, e.now()); err != nil {
		e.logErr(e.idLogContext(ctx, r.Pending.DeploymentID), "marking approval "+r.Pending.ApprovalID+" mailed", err)
	}
	e.event(ctx, r.Pending.DeploymentID, typ, "", msg, nil)
}
