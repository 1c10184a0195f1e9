// Package audit records who did what to which target, with what result: every mutation through
// the API, every access to a cluster made on a user's behalf, and every refused request. Records
// carry the request id, so one line of the access log, the audit log and the traces tie together.
package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Results.
const (
	Success = "success"
	Failed  = "failed"
	Invalid = "invalid"
	Denied  = "denied"
)

// Entry is one event to record. Details must never hold a secret (a kubeconfig, a token).
type Entry struct {
	Action     string
	TargetKind string
	TargetName string
	Result     string
	Details    map[string]any
}

// Recorder writes entries to the store.
type Recorder struct {
	exec store.Executor
	log  *slog.Logger
	now  func() time.Time
}

// NewRecorder returns a recorder writing through exec.
func NewRecorder(exec store.Executor, log *slog.Logger, now func() time.Time) *Recorder {
	return &Recorder{exec: exec, log: log, now: now}
}

// Params turns an entry into the store's insert parameters, with the actor and request id of ctx.
func (r *Recorder) Params(ctx context.Context, e Entry) *store.AuditInsertParams {
	actor := "anonymous"
	if id, ok := auth.IdentityFrom(ctx); ok {
		actor = id.Subject
	}
	details := ""
	if len(e.Details) > 0 {
		b, err := json.Marshal(e.Details)
		if err == nil {
			details = string(b)
		}
	}
	return &store.AuditInsertParams{
		At: r.now().UTC(), Actor: actor, Action: e.Action, TargetKind: e.TargetKind, TargetName: e.TargetName,
		Result: e.Result, RequestID: telemetry.RequestID(ctx), Details: details,
	}
}

// RecordWith writes e with exec (the pool, or the transaction of the change it records, so that
// the change and its record commit together). A failure is returned for the caller to decide.
func (r *Recorder) RecordWith(ctx context.Context, exec store.Executor, e Entry) error {
	_, err := exec.AuditInsert(ctx, r.Params(ctx, e))
	return err
}

// Record writes e on its own; a failure is logged (at error, with the whole entry) and otherwise
// ignored, so a failed change is never reported as something else because its record failed.
func (r *Recorder) Record(ctx context.Context, e Entry) {
	// The record outlives a cancelled request: who tried what must be kept.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.RecordWith(ctx, r.exec, e); err != nil {
		r.log.ErrorContext(ctx, "audit: Writing the audit record failed", "err", err,
			"action", e.Action, "targetKind", e.TargetKind, "targetName", e.TargetName, "result", e.Result)
	}
}

// Denied records a request refused for want of a role.
func (r *Recorder) Denied(ctx context.Context, action, route, path string) {
	if action == "" {
		action = "read"
	}
	r.Record(ctx, Entry{Action: action, TargetKind: "route", TargetName: route, Result: Denied,
		Details: map[string]any{"path": path}})
}
