package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// parseDefinition reads a CRD given as a JSON object or as YAML text in a JSON string.
func parseDefinition(field string, raw json.RawMessage) (*apiextensionsv1.CustomResourceDefinition, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errInvalid(field, "required: a CustomResourceDefinition as a JSON object or YAML text")
	}
	data := []byte(raw)
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, errInvalid(field, "not a JSON string: %v", err)
		}
		j, err := yaml.YAMLToJSON([]byte(text))
		if err != nil {
			return nil, errInvalid(field, "not YAML: %v", err)
		}
		data = j
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, errInvalid(field, "not a CustomResourceDefinition: %v", err)
	}
	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
		return nil, errInvalid(field, "apiVersion/kind must be apiextensions.k8s.io/v1 CustomResourceDefinition, not %q %q", crd.APIVersion, crd.Kind)
	}
	if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
		return nil, errInvalid(field+".metadata.name", "must be <plural>.<group> (%q), not %q", want, crd.Name)
	}
	storage := 0
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage++
		}
	}
	if len(crd.Spec.Versions) == 0 || storage != 1 {
		return nil, errInvalid(field+".spec.versions", "must list at least one version, exactly one of them the storage version")
	}
	return &crd, nil
}

func (s *Server) createCRD(w http.ResponseWriter, r *http.Request) error {
	var req api.CRDRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	entry := audit.Entry{Action: "crd.create", TargetKind: "crd", Details: map[string]any{"version": req.Version}}
	crd, err := parseDefinition("definition", req.Definition)
	if crd != nil {
		entry.TargetName = crd.Name
	}
	if err == nil && req.Version == "" {
		err = errInvalid("version", "required: a label for this revision, such as the release that ships it")
	}
	var note store.MigrationNote
	if err == nil && req.MigrationNote != nil {
		note, err = crds.CheckNote("migrationNote", store.MigrationNote{Text: req.MigrationNote.Text, URL: req.MigrationNote.URL})
	}
	if err == nil {
		_, err = crds.InsertRevision(ctx, s.store, crd, "", req.Version, note, s.now().UTC())
	}
	// Refused attempts are recorded too, with the field that refused them.
	entry.Result = resultOf(err)
	addRefusal(entry.Details, err)
	s.audit.Record(ctx, entry)
	if errors.Is(err, store.ErrAlreadyExists) {
		return errAlreadyExists("crd revision", crd.Name+"@"+req.Version)
	}
	if err != nil {
		return err
	}
	out, err := s.crdOut(ctx, crd.Name)
	if err != nil {
		return err
	}
	writeJSON(ctx, s.log, w, http.StatusCreated, out)
	return nil
}

func (s *Server) listCRDs(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	list, err := s.store.CRDList(ctx, &store.CRDListParams{Group: r.URL.Query().Get("group"), After: p.After, Limit: p.Limit})
	if err != nil {
		return err
	}
	ops := map[string]string{}
	out := api.CRDList{Items: make([]api.CRDSummary, 0, len(list))}
	for _, c := range list {
		sum := api.CRDSummary{Name: c.Name, Group: c.Group, Kind: c.Kind, Revisions: c.Revisions}
		if c.Latest != nil {
			rev, err := s.revisionOut(ctx, ops, c.Latest)
			if err != nil {
				return err
			}
			sum.Latest = rev
		}
		out.Items = append(out.Items, sum)
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].Name)
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) getCRD(w http.ResponseWriter, r *http.Request) error {
	out, err := s.crdOut(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	if out.Clusters, err = s.crdClusters(r.Context(), out); err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}

// revisions returns a CRD's stored revisions, oldest first; 404 when there are none.
func (s *Server) revisions(ctx context.Context, name string) ([]*store.CRDSchema, error) {
	revs, err := s.store.CRDSchemaList(ctx, &store.CRDSchemaListParams{Name: name})
	if err != nil {
		return nil, err
	}
	if len(revs) == 0 {
		return nil, errNotFound("crd", name)
	}
	return revs, nil
}

func (s *Server) crdOut(ctx context.Context, name string) (*api.CRD, error) {
	revs, err := s.revisions(ctx, name)
	if err != nil {
		return nil, err
	}
	latest := revs[len(revs)-1]
	out := &api.CRD{Name: name, Group: latest.Group, Kind: latest.Kind, Scope: latest.Scope,
		Revisions: make([]api.CRDRevision, 0, len(revs)), Approvals: []api.Approval{}}
	hists, err := s.crdHistories(ctx, name)
	if err != nil {
		return nil, err
	}
	shipping := versionsByRevision(hists, name)
	ops := map[string]string{}
	for _, rev := range revs {
		r, err := s.revisionOut(ctx, ops, rev)
		if err != nil {
			return nil, err
		}
		r.Versions = shipping[rev.ID]
		out.Revisions = append(out.Revisions, r)
	}
	if out.DroppedIn, err = s.droppedIn(ctx, ops, hists, name); err != nil {
		return nil, err
	}
	approvals, err := s.store.CRDApprovalList(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, a := range approvals {
		out.Approvals = append(out.Approvals, approvalOut(a))
	}
	return out, nil
}

// revisionOut names a revision's operator; ops caches operator names by id within one response.
func (s *Server) revisionOut(ctx context.Context, ops map[string]string, rev *store.CRDSchema) (api.CRDRevision, error) {
	out := api.CRDRevision{Version: rev.Version, Digest: rev.Digest, CreatedAt: rev.CreatedAt, MigrationNote: noteOut(rev.Note)}
	if rev.OperatorID == "" {
		return out, nil
	}
	name, ok := ops[rev.OperatorID]
	if !ok {
		op, err := s.store.OperatorGetByID(ctx, rev.OperatorID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return out, err
		}
		if op != nil {
			name = op.Name
		}
		ops[rev.OperatorID] = name
	}
	out.Operator = name
	return out, nil
}

func approvalOut(a *store.CRDApproval) api.Approval {
	return api.Approval{CRD: a.CRDName, FromDigest: a.FromDigest, ToDigest: a.ToDigest, ToVersion: a.ToVersion,
		ApprovedBy: a.ApprovedBy, Reason: a.Reason, RequestID: a.RequestID, CreatedAt: a.CreatedAt}
}

// candidate is the definition a validation or approval is about, and the stored revision it is
// compared with (nil for a CRD's first revision).
type candidate struct {
	crd     *apiextensionsv1.CustomResourceDefinition // nil when the version drops the CRD
	digest  string                                    // crds.DroppedDigest when it drops it
	created time.Time                                 // when the stored candidate was recorded (zero for a submitted one)
	label   string
	opName  string
	base    *store.CRDSchema
	// For an operator's version: the version compared with (baseVersion), the history, the
	// revisions by id, and the migration notes on the way.
	name        string
	baseVersion string
	dropped     bool
	toNote      store.MigrationNote
	notes       []api.RevisionNote
}

// resolveCandidate finds the candidate of a validate request and its baseline. For an operator's
// chart version the candidate is the CRD as of that version and the baseline the CRD as of the
// operator's previous version (or baseVersion); for a submitted definition the baseline is the
// latest stored revision (or the one labelled baseVersion).
func (s *Server) resolveCandidate(ctx context.Context, name string, req api.ValidateRequest) (*candidate, error) {
	revs, err := s.store.CRDSchemaList(ctx, &store.CRDSchemaListParams{Name: name})
	if err != nil {
		return nil, err
	}
	c := &candidate{}
	switch {
	case len(req.Definition) > 0:
		if req.Operator != "" || req.Version != "" {
			return nil, errInvalid("definition", "give either definition or operator and version, not both")
		}
		crd, err := parseDefinition("definition", req.Definition)
		if err != nil {
			return nil, err
		}
		if crd.Name != name {
			return nil, errInvalid("definition.metadata.name", "is %q but the request is for %q", crd.Name, name)
		}
		_, digest, err := crds.Encode(crd)
		if err != nil {
			return nil, err
		}
		c.crd, c.digest, c.label = crd, digest, "submitted"
	case req.Operator != "":
		return s.operatorCandidate(ctx, name, revs, req)
	default:
		return nil, errInvalid("definition", "required: a definition, or an operator and version")
	}
	if req.BaseVersion != "" {
		i := slices.IndexFunc(revs, func(rev *store.CRDSchema) bool { return rev.Version == req.BaseVersion })
		if i < 0 {
			return nil, errInvalid("baseVersion", "CRD %q has no stored revision %q", name, req.BaseVersion)
		}
		c.base = revs[i]
		return c, nil
	}
	if len(revs) > 0 {
		c.base = revs[len(revs)-1]
	}
	return c, nil
}

func storedCRD(rev *store.CRDSchema) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(rev.Definition, &crd); err != nil {
		return nil, fmt.Errorf("decoding stored CRD %s@%s: %w", rev.Name, rev.Version, err)
	}
	return &crd, nil
}

func (s *Server) approveCRD(w http.ResponseWriter, r *http.Request) error {
	var req api.ApproveRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	ctx, name := r.Context(), r.PathValue("name")
	a, err := s.recordCRDApproval(ctx, name, req)
	if err != nil {
		// A refused or failed approval is recorded on its own (a recorded one is in the transaction).
		details := map[string]any{"operator": req.Operator, "version": req.Version, "digest": req.Digest}
		addRefusal(details, err)
		s.audit.Record(ctx, audit.Entry{Action: "crd.approve", TargetKind: "crd", TargetName: name, Result: resultOf(err),
			Details: details})
		return err
	}
	writeJSON(ctx, s.log, w, http.StatusCreated, approvalOut(a))
	return nil
}

// recordCRDApproval checks an approve request and stores the approval with its audit record.
func (s *Server) recordCRDApproval(ctx context.Context, name string, req api.ApproveRequest) (*store.CRDApproval, error) {
	if req.Reason == "" {
		return nil, errInvalid("reason", "required: why this breaking change is accepted")
	}
	if (req.Version == "") == (req.Digest == "") || (req.Operator != "" && req.Digest != "") {
		return nil, errInvalid("version", "give exactly one of version and digest (with operator: version)")
	}
	from, to, err := s.approvalTarget(ctx, name, req)
	if err != nil {
		return nil, err
	}
	p := &store.CRDApprovalCreateParams{CRDName: name, ToDigest: to.Digest, ToVersion: to.Version, Reason: req.Reason, Now: s.now().UTC()}
	if from != nil {
		p.FromDigest = from.Digest
	}
	entry := s.audit.Params(ctx, audit.Entry{Action: "crd.approve", TargetKind: "crd", TargetName: name, Result: audit.Success,
		Details: map[string]any{"toVersion": to.Version, "toDigest": to.Digest, "fromDigest": p.FromDigest}})
	p.ApprovedBy, p.RequestID = entry.Actor, entry.RequestID
	// The approval and its audit record commit together: an approval nobody can trace is worse than none.
	return store.WithTxV(ctx, s.store, func(ctx context.Context, tx store.Tx) (*store.CRDApproval, error) {
		a, err := tx.CRDApprovalCreate(ctx, p)
		if err != nil {
			return nil, err
		}
		if _, err := tx.AuditInsert(ctx, entry); err != nil {
			return nil, err
		}
		return a, nil
	})
}

// approvalTarget finds the change an approve request names: the revisions it goes from (nil for
// a first revision) and to.
func (s *Server) approvalTarget(ctx context.Context, name string, req api.ApproveRequest) (from, to *store.CRDSchema, err error) {
	if req.Operator != "" {
		c, err := s.resolveCandidate(ctx, name, api.ValidateRequest{Operator: req.Operator, Version: req.Version, BaseVersion: req.BaseVersion})
		if err != nil {
			return nil, nil, err
		}
		to = &store.CRDSchema{Digest: c.digest, Version: c.label}
		return c.base, to, nil
	}
	revs, err := s.revisions(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(revs, func(rev *store.CRDSchema) bool {
		return (req.Digest != "" && rev.Digest == req.Digest) || (req.Version != "" && rev.Version == req.Version)
	})
	if i < 0 {
		field, v := "version", req.Version
		if req.Digest != "" {
			field, v = "digest", req.Digest
		}
		return nil, nil, errInvalid(field, "CRD %q has no stored revision %q", name, v)
	}
	to = revs[i]
	switch {
	case req.BaseVersion != "":
		j := slices.IndexFunc(revs, func(rev *store.CRDSchema) bool { return rev.Version == req.BaseVersion })
		if j < 0 {
			return nil, nil, errInvalid("baseVersion", "CRD %q has no stored revision %q", name, req.BaseVersion)
		}
		from = revs[j]
	case i > 0:
		from = revs[i-1]
	}
	return from, to, nil
}
