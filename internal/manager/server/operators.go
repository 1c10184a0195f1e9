package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

func (s *Server) createOperator(w http.ResponseWriter, r *http.Request) error {
	var req api.OperatorRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	op, err := s.registerOperator(ctx, req)
	entry := audit.Entry{Action: "operator.create", TargetKind: "operator", TargetName: req.Name, Result: resultOf(err),
		Details: map[string]any{"namespace": req.Namespace, "repository": req.Chart.Repository, "chart": req.Chart.Name,
			"credentials": req.Chart.Credentials != nil, "defaultValues": len(req.DefaultValues) > 0}}
	if e, ok := invalid.As(err); ok {
		entry.Details["field"], entry.Details["reason"] = e.Field, e.Reason
	}
	s.audit.Record(ctx, entry)
	if errors.Is(err, store.ErrAlreadyExists) {
		return errAlreadyExists("operator", req.Name)
	}
	if err != nil {
		return err
	}
	newest := ""
	if len(op.Versions) > 0 {
		newest = op.Versions[0]
	}
	s.log.InfoContext(ctx, "server: Registered operator", "operatorName", op.Name, "version", newest,
		"versions", len(op.Versions), "repository", op.Chart.Repository)
	writeJSON(ctx, s.log, w, http.StatusCreated, op)
	return nil
}

// registerOperator validates the request, discovers the chart's versions, extracts each version's
// CRDs, and stores the operator, its versions and its CRD schema history in one transaction: a
// refused or failed registration writes nothing.
func (s *Server) registerOperator(ctx context.Context, req api.OperatorRequest) (*api.Operator, error) {
	if err := operators.ValidateName("name", req.Name); err != nil {
		return nil, err
	}
	if err := operators.ValidateNamespace("namespace", req.Namespace); err != nil {
		return nil, err
	}
	ref := operators.ChartRef{Repository: req.Chart.Repository, Name: req.Chart.Name}
	if err := operators.ValidateRef(ref); err != nil {
		return nil, err
	}
	creds, err := credentialsIn(req.Chart.Credentials)
	if err != nil {
		return nil, err
	}
	if !creds.IsAnonymous() && s.sealer == nil {
		return nil, errNoSealer
	}
	ref.Auth = creds
	defaults, err := defaultValuesIn(req.DefaultValues)
	if err != nil {
		return nil, err
	}
	var edit configEdit
	if !creds.IsAnonymous() {
		edit.creds = &creds
	}
	if defaults != nil {
		edit.values = &defaults
	}
	notes, err := parseMigrationNotes("migrationNotes", req.MigrationNotes)
	if err != nil {
		return nil, err
	}
	if old, err := s.store.OperatorGetByName(ctx, req.Name); err == nil {
		return nil, nameTaken(old)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	found, err := s.charts.Inspect(ctx, ref, req.Versions)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	op, err := store.WithTxV(ctx, s.store, func(ctx context.Context, tx store.Tx) (*store.Operator, error) {
		op, err := tx.OperatorCreate(ctx, &store.OperatorCreateParams{
			ID: uuid.NewString(), Name: req.Name, Namespace: req.Namespace, ChartRepository: ref.Repository,
			ChartName: ref.Name, VersionFilter: req.Versions, Now: now,
		})
		if err != nil {
			return nil, err
		}
		if err := storeVersions(ctx, tx, op.ID, found.CRDs, notes, now); err != nil {
			return nil, err
		}
		if err := s.refresh.RecordRegistration(ctx, tx, op, ref, now); err != nil {
			return nil, err
		}
		if !edit.empty() {
			if err := s.storeConfig(ctx, tx, op.ID, edit, now); err != nil {
				return nil, err
			}
			return tx.OperatorGetByID(ctx, op.ID)
		}
		return op, nil
	})
	if err != nil {
		return nil, err
	}
	telemetry.SetOperatorCount(ctx, s.store)
	return s.operatorWithVersions(ctx, op)
}

// insertCRDSchema stores one revision of a CRD, keyed by the digest of its JSON (POST /crds).
// An operator's chart versions are stored with storeVersions, which also records which
// revision each version ships.
func insertCRDSchema(ctx context.Context, exec store.Executor, crd *apiextensionsv1.CustomResourceDefinition, operatorID, version string, now time.Time) (*store.CRDSchema, error) {
	return crds.InsertRevision(ctx, exec, crd, operatorID, version, store.MigrationNote{}, now)
}

func (s *Server) listOperators(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	list, err := s.store.OperatorList(ctx, &store.OperatorListParams{Namespace: r.URL.Query().Get("namespace"), After: p.After, Limit: p.Limit})
	if err != nil {
		return err
	}
	ids := make([]string, len(list))
	for i, op := range list {
		ids[i] = op.ID
	}
	// One query for the versions of the whole page, not one per operator.
	versions, err := s.store.OperatorVersionListMany(ctx, ids)
	if err != nil {
		return err
	}
	out := api.OperatorList{Items: make([]api.Operator, 0, len(list))}
	for _, op := range list {
		out.Items = append(out.Items, operatorOut(op, versions[op.ID]))
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].Name)
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) getOperator(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ctx := r.Context()
	op, err := s.store.OperatorGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("operator", name)
	}
	if err != nil {
		return err
	}
	o, err := s.operatorWithVersions(ctx, op)
	if err != nil {
		return err
	}
	writeJSON(ctx, s.log, w, http.StatusOK, o)
	return nil
}

// operatorWithVersions is op as the API shows it: its versions, its configuration and its last
// refresh.
func (s *Server) operatorWithVersions(ctx context.Context, op *store.Operator) (*api.Operator, error) {
	versions, err := s.store.OperatorVersionList(ctx, op.ID)
	if err != nil {
		return nil, err
	}
	out := operatorOut(op, versions)
	if err := s.configOut(ctx, &out); err != nil {
		return nil, err
	}
	if out.Refresh, err = s.refreshStatus(ctx, op.ID); err != nil {
		return nil, err
	}
	return &out, nil
}

// operatorOut is op with its versions: those that can be deployed in Versions, those marked
// removed in RemovedVersions.
func operatorOut(op *store.Operator, versions []*store.OperatorVersion) api.Operator {
	out := api.Operator{
		ID: op.ID, Name: op.Name, Namespace: op.Namespace, VersionFilter: op.VersionFilter, CreatedAt: op.CreatedAt,
		Chart: api.ChartRef{Repository: op.ChartRepository, Name: op.ChartName}, Versions: make([]string, 0, len(versions)),
		UpdatedAt: op.UpdatedAt, DeletedAt: op.DeletedAt,
	}
	for _, v := range versions {
		if v.RemovedAt != nil {
			out.RemovedVersions = append(out.RemovedVersions, api.RemovedVersion{Version: v.Version, RemovedAt: *v.RemovedAt, Reason: v.RemovedReason})
			continue
		}
		out.Versions = append(out.Versions, v.Version)
	}
	return out
}
