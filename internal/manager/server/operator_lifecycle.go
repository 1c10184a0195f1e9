package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Operators after registration (issue 19): refreshed (POST /operators/{name}/refresh, and the
// loop of package refresh), changed (PATCH) and deleted (DELETE, history kept).

// StoreVersions stores an operator's newly found chart versions with the CRDs each ships, in
// tx, exactly as registration does (storeVersions, without migration notes): the refresh loop's
// Config.StoreVersions.
func StoreVersions(ctx context.Context, tx store.Tx, operatorID string, found []operators.VersionCRDs, now time.Time) error {
	return storeVersions(ctx, tx, operatorID, found, nil, now)
}

// NewRefresher is refresh.New storing versions as registration does (StoreVersions).
func NewRefresher(cfg refresh.Config) (*refresh.Refresher, error) {
	cfg.StoreVersions = StoreVersions
	return refresh.New(cfg)
}

// liveOperator is the operator name, refused when it was deleted.
func (s *Server) liveOperator(ctx context.Context, name string) (*store.Operator, error) {
	op, err := s.store.OperatorGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNotFound("operator", name)
	}
	if err != nil {
		return nil, err
	}
	if op.DeletedAt != nil {
		return nil, &Error{Status: http.StatusConflict, Code: api.CodeConflict,
			Message: fmt.Sprintf("operator %q was deleted at %s: its history stays readable, but it can no longer change", name, op.DeletedAt.Format(time.RFC3339)),
			Details: map[string]any{"kind": "operator", "name": name}}
	}
	return op, nil
}

// nameTaken is registration's answer for a name in use; a deleted operator keeps its name with
// its history.
func nameTaken(op *store.Operator) error {
	if op.DeletedAt == nil {
		return store.ErrAlreadyExists
	}
	return &Error{Status: http.StatusConflict, Code: api.CodeAlreadyExists,
		Message: fmt.Sprintf("operator %q was deleted at %s and its history (deployments, audit, CRD revisions) keeps the name: register the operator under another name",
			op.Name, op.DeletedAt.Format(time.RFC3339)),
		Details: map[string]any{"kind": "operator", "name": op.Name}}
}

func (s *Server) refreshStatus(ctx context.Context, operatorID string) (*api.OperatorRefreshStatus, error) {
	rec, err := s.store.OperatorRefreshGet(ctx, operatorID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &api.OperatorRefreshStatus{CheckedAt: rec.CheckedAt, SucceededAt: rec.SucceededAt, NextAt: rec.NextAt,
		Error: rec.Error, Failures: rec.Failures}, nil
}

// notesIn applies migration notes in a refresh's transaction (nil: none).
func notesIn(operatorID string, notes []crds.VersionNote) func(context.Context, store.Tx) error {
	if len(notes) == 0 {
		return nil
	}
	return func(ctx context.Context, tx store.Tx) error {
		return crds.ApplyNotes(ctx, tx, operatorID, "migrationNotes", notes)
	}
}

// operatorEntry is the audit record of an operator request, with what its refresh found.
func operatorEntry(action, name string, err error, res *api.OperatorRefreshResult, details map[string]any) audit.Entry {
	e := audit.Entry{Action: action, TargetKind: "operator", TargetName: name, Result: resultOf(err), Details: details}
	if res != nil {
		e.Details["added"], e.Details["removed"], e.Details["restored"] = res.Added, res.Removed, res.Restored
		e.Details["changed"], e.Details["failed"], e.Details["notModified"] = res.Changed, len(res.Failed), res.NotModified
	}
	if ie, ok := invalid.As(err); ok {
		e.Details["field"], e.Details["reason"] = ie.Field, ie.Reason
	}
	return e
}

// refreshOperator re-reads the operator's chart source now: 200 with what was found.
func (s *Server) refreshOperator(w http.ResponseWriter, r *http.Request) error {
	var req api.RefreshRequest
	if err := s.decodeOptional(r, &req); err != nil {
		return err
	}
	ctx, name := r.Context(), r.PathValue("name")
	res, err := s.refreshNow(ctx, name, req)
	if apiErr := (*Error)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return err
	}
	s.audit.Record(ctx, operatorEntry("operator.refresh", name, err, res, map[string]any{}))
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "server: Refreshed operator", "operatorName", name, "added", res.Added, "removed", res.Removed,
		"notModified", res.NotModified)
	writeJSON(ctx, s.log, w, http.StatusOK, res)
	return nil
}

func (s *Server) refreshNow(ctx context.Context, name string, req api.RefreshRequest) (*api.OperatorRefreshResult, error) {
	notes, err := parseMigrationNotes("migrationNotes", req.MigrationNotes)
	if err != nil {
		return nil, err
	}
	op, err := s.liveOperator(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.refresh.Refresh(ctx, op, refresh.Options{Extra: notesIn(op.ID, notes)})
}

// updateOperator changes the operator's chart source, version filter or migration notes: 200
// with the operator as it is then.
func (s *Server) updateOperator(w http.ResponseWriter, r *http.Request) error {
	var req api.OperatorPatch
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	ctx, name := r.Context(), r.PathValue("name")
	before, _ := s.store.OperatorGetByName(ctx, name)
	op, res, err := s.changeOperator(ctx, name, req)
	details := map[string]any{}
	if before != nil {
		details["from"] = map[string]any{"repository": before.ChartRepository, "chart": before.ChartName, "versions": before.VersionFilter}
	}
	if op != nil {
		details["to"] = map[string]any{"repository": op.ChartRepository, "chart": op.ChartName, "versions": op.VersionFilter}
	}
	if req.DefaultValues != nil {
		details["defaultValues"] = map[bool]string{true: "replaced", false: "removed"}[string(bytes.TrimSpace(req.DefaultValues)) != "null"]
	}
	if req.Chart != nil && req.Chart.Credentials.Present {
		// That they changed, never what they are.
		details["credentials"] = map[bool]string{true: "replaced", false: "removed"}[req.Chart.Credentials.Value != nil]
	}
	s.audit.Record(ctx, operatorEntry("operator.update", name, err, res, details))
	if err != nil {
		return err
	}
	o, err := s.operatorWithVersions(ctx, op)
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "server: Changed operator", "operatorName", name, "repository", op.ChartRepository,
		"chart", op.ChartName, "versionFilter", op.VersionFilter, "added", res.Added, "removed", res.Removed)
	writeJSON(ctx, s.log, w, http.StatusOK, o)
	return nil
}

func (s *Server) changeOperator(ctx context.Context, name string, req api.OperatorPatch) (*store.Operator, *api.OperatorRefreshResult, error) {
	if req.Namespace != nil {
		return nil, nil, errInvalid("namespace", "cannot change: the operator's releases live in its namespace; register the operator again under another name to install it elsewhere")
	}
	if req.Chart == nil && req.Versions == nil && req.MigrationNotes == nil && req.DefaultValues == nil {
		return nil, nil, errInvalid("", "nothing to change: give chart (repository, name, credentials), versions, migrationNotes or defaultValues")
	}
	notes, err := parseMigrationNotes("migrationNotes", req.MigrationNotes)
	if err != nil {
		return nil, nil, err
	}
	edit, err := patchEdit(req)
	if err != nil {
		return nil, nil, err
	}
	op, err := s.liveOperator(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if req.Chart == nil && req.Versions == nil && req.MigrationNotes == nil {
		// Default values alone: the source is not read.
		err := store.WithTx(ctx, s.store, func(ctx context.Context, tx store.Tx) error {
			return s.storeConfig(ctx, tx, op.ID, edit, s.now().UTC())
		})
		if err != nil {
			return nil, nil, err
		}
		op, err = s.store.OperatorGetByID(ctx, op.ID)
		return op, &api.OperatorRefreshResult{Added: []string{}, Removed: []string{}}, err
	}
	ch := refresh.Change{Ref: operators.ChartRef{Repository: op.ChartRepository, Name: op.ChartName}, Filter: op.VersionFilter}
	if edit.creds != nil {
		ch.Ref.Auth = *edit.creds
	} else if ch.Ref.Auth, err = s.credentialsOf(ctx, op.ID); err != nil {
		return nil, nil, err
	}
	if req.Chart != nil {
		ch.Ref.Repository = cmpOr(req.Chart.Repository, ch.Ref.Repository)
		ch.Ref.Name = cmpOr(req.Chart.Name, ch.Ref.Name)
	}
	if req.Versions != nil {
		ch.Filter = *req.Versions
	}
	extra := notesIn(op.ID, notes)
	if !edit.empty() {
		notesTx, now := extra, s.now().UTC()
		extra = func(ctx context.Context, tx store.Tx) error {
			if notesTx != nil {
				if err := notesTx(ctx, tx); err != nil {
					return err
				}
			}
			return s.storeConfig(ctx, tx, op.ID, edit, now)
		}
	}
	res, updated, err := s.changeSource(ctx, op, ch, extra)
	return updated, res, err
}

// patchEdit is the config a PATCH changes: credentials given (null: removed) and default values
// given (null: removed), validated.
func patchEdit(req api.OperatorPatch) (configEdit, error) {
	var edit configEdit
	if req.Chart != nil && req.Chart.Credentials.Present {
		c, err := credentialsIn(req.Chart.Credentials.Value)
		if err != nil {
			return edit, err
		}
		edit.creds = &c
	}
	if req.DefaultValues != nil {
		v, err := defaultValuesIn(req.DefaultValues)
		if err != nil {
			return edit, err
		}
		edit.values = &v
	}
	return edit, nil
}

// changeSource is the refresher's Change, refused with 409 while deployments are active when the
// chart source moves; extra runs in its transaction.
func (s *Server) changeSource(ctx context.Context, op *store.Operator, ch refresh.Change, extra func(context.Context, store.Tx) error) (*api.OperatorRefreshResult, *store.Operator, error) {
	if ch.Ref.Repository != op.ChartRepository || ch.Ref.Name != op.ChartName {
		// A deployment fetches its chart from the operator's source at each step.
		if err := s.noActiveDeployments(ctx, s.store, op, "its chart source cannot change"); err != nil {
			return nil, nil, err
		}
	}
	return s.refresh.Change(ctx, op, ch, refresh.Options{Extra: extra})
}

func cmpOr(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// noActiveDeployments is a 409 naming op's active deployments, nil when it has none.
func (s *Server) noActiveDeployments(ctx context.Context, exec store.Executor, op *store.Operator, what string) error {
	active, err := exec.DeploymentList(ctx, &store.DeploymentListParams{OperatorID: op.ID, Active: true, Limit: 100})
	if err != nil || len(active) == 0 {
		return err
	}
	ids, named := make([]string, len(active)), make([]string, len(active))
	for i, d := range active {
		ids[i], named[i] = d.ID, fmt.Sprintf("%s (%s %s)", d.ID, d.Version, d.Status)
	}
	return &Error{Status: http.StatusConflict, Code: api.CodeConflict,
		Message: fmt.Sprintf("operator %q has active deployments: %s; %s until they finish (or cancel them: DELETE /api/v1/deployments/{id})",
			op.Name, strings.Join(named, ", "), what),
		Details: map[string]any{"deployments": ids}}
}

// deleteOperator deletes the operator (Admin): refused while it has active deployments; its
// deployments, audit records and CRD revisions stay readable. 204.
func (s *Server) deleteOperator(w http.ResponseWriter, r *http.Request) error {
	ctx, name := r.Context(), r.PathValue("name")
	op, err := s.store.OperatorGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("operator", name)
	}
	if err != nil {
		return err
	}
	if op.DeletedAt != nil {
		return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound,
			Message: fmt.Sprintf("operator %q was deleted already, at %s", name, op.DeletedAt.Format(time.RFC3339)),
			Details: map[string]any{"kind": "operator", "name": name}}
	}
	err = s.removeOperator(ctx, op)
	s.audit.Record(ctx, operatorEntry("operator.delete", name, err, nil, map[string]any{
		"repository": op.ChartRepository, "chart": op.ChartName, "namespace": op.Namespace}))
	if err != nil {
		return err
	}
	telemetry.SetOperatorCount(ctx, s.store)
	s.log.InfoContext(ctx, "server: Deleted operator", "operatorName", name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeOperator marks op deleted, in one transaction with the check for active deployments,
// and forgets its latest health (no longer watched; the releases stay installed).
func (s *Server) removeOperator(ctx context.Context, op *store.Operator) error {
	return store.WithTx(ctx, s.store, func(ctx context.Context, tx store.Tx) error {
		if err := s.noActiveDeployments(ctx, tx, op, "it cannot be deleted"); err != nil {
			return err
		}
		if _, err := tx.OperatorMarkDeleted(ctx, &store.OperatorMarkDeletedParams{ID: op.ID, Now: s.now().UTC()}); err != nil {
			return err
		}
		recs, err := tx.OperatorHealthList(ctx, &store.OperatorHealthListParams{OperatorName: op.Name})
		if err != nil {
			return err
		}
		for _, h := range recs {
			if err := tx.OperatorHealthDelete(ctx, op.Name, h.ClusterName); err != nil {
				return err
			}
		}
		return nil
	})
}
