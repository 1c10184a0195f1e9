package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// The CRD schema diff of the web UI: one revision's stored definition, and the changes between
// the revisions two versions ship, from the compatibility checker validate uses (crds.Compare).

var versionQuery = []queryParam{{Name: "operator", Description: "the operator whose version is meant, when several ship the CRD"}}

func (s *Server) getCRDRevision(w http.ResponseWriter, r *http.Request) error {
	ctx, name, version := r.Context(), r.PathValue("name"), r.PathValue("version")
	rev, out, err := s.revisionAt(ctx, name, "version", version, r.URL.Query().Get("operator"))
	if err != nil {
		return err
	}
	writeJSON(ctx, s.log, w, http.StatusOK, api.CRDRevisionDefinition{CRD: name, Revision: out, Definition: rev.Definition})
	return nil
}

func (s *Server) getCRDDiff(w http.ResponseWriter, r *http.Request) error {
	ctx, name, q := r.Context(), r.PathValue("name"), r.URL.Query()
	for _, p := range []string{"from", "to"} {
		if q.Get(p) == "" {
			return errInvalid(p, "required: a version (an operator version that ships the CRD, or a posted revision's label)")
		}
	}
	from, fromOut, err := s.revisionAt(ctx, name, "from", q.Get("from"), q.Get("operator"))
	if err != nil {
		return err
	}
	to, toOut, err := s.revisionAt(ctx, name, "to", q.Get("to"), q.Get("operator"))
	if err != nil {
		return err
	}
	out := api.CRDDiff{CRD: name, From: fromOut, To: toOut, Identical: from.ID == to.ID, Changes: []api.SchemaChange{}}
	if !out.Identical {
		oldCRD, err := storedCRD(from)
		if err != nil {
			return err
		}
		newCRD, err := storedCRD(to)
		if err != nil {
			return err
		}
		report, err := crds.Compare(oldCRD, newCRD)
		if err != nil {
			return err
		}
		for _, ch := range report.Changes {
			out.Changes = append(out.Changes, api.SchemaChange{Path: ch.Path, Kind: ch.Kind, Version: ch.Version, Breaking: ch.Breaking, Message: ch.Message})
		}
		out.Breaking = report.Breaking()
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

// revisionAt finds the revision of CRD name that version ships: an operator's version (of the
// operator named, when given) through the operator's CRD history, else a posted revision's
// label. field names the parameter in errors.
func (s *Server) revisionAt(ctx context.Context, name, field, version, operator string) (*store.CRDSchema, api.CRDRevision, error) {
	revs, err := s.revisions(ctx, name)
	if err != nil {
		return nil, api.CRDRevision{}, err
	}
	byID := make(map[int64]*store.CRDSchema, len(revs))
	for _, rev := range revs {
		byID[rev.ID] = rev
	}
	hists, err := s.crdHistories(ctx, name)
	if err != nil {
		return nil, api.CRDRevision{}, err
	}
	ops := map[string]string{}
	opIDs, err := s.shippingOperators(ctx, ops, hists, name, field, operator)
	if err != nil {
		return nil, api.CRDRevision{}, err
	}
	var found *store.CRDSchema
	var dropped, shippers []string
	for _, id := range opIDs {
		h := hists[id]
		if !h.Has(version) {
			continue
		}
		switch sh := h.At(version, name); {
		case sh.Row != nil && byID[sh.Row.SchemaID] != nil:
			if found != nil && found.ID != sh.Row.SchemaID {
				return nil, api.CRDRevision{}, errInvalid("operator", "version %q of operators %s ships different revisions of CRD %q: name the operator (operator=)",
					version, strings.Join(append(shippers, ops[id]), " and "), name)
			}
			found, shippers = byID[sh.Row.SchemaID], append(shippers, ops[id])
		case sh.Dropped:
			dropped = append(dropped, ops[id])
		}
	}
	if found == nil && operator == "" {
		// A posted revision's label (the newest revision of that label).
		for _, rev := range revs {
			if rev.Version == version {
				found = rev
			}
		}
	}
	if found == nil {
		return nil, api.CRDRevision{}, revisionNotFound(name, field, version, dropped)
	}
	out, err := s.revisionOut(ctx, ops, found)
	if err != nil {
		return nil, api.CRDRevision{}, err
	}
	out.Version = version
	return found, out, nil
}

// shippingOperators are the ids of the operators whose history of CRD name is read, in a stable
// order: all of them, or the one named.
func (s *Server) shippingOperators(ctx context.Context, ops map[string]string, hists map[string]*crds.History, name, field, operator string) ([]string, error) {
	var ids []string
	for id := range hists {
		rev, err := s.revisionOut(ctx, ops, &store.CRDSchema{OperatorID: id})
		if err != nil {
			return nil, err
		}
		if operator == "" || rev.Operator == operator {
			ids = append(ids, id)
		}
	}
	if operator != "" && len(ids) == 0 {
		return nil, errInvalid("operator", "no operator %q ships CRD %q", operator, name)
	}
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(ops[a], ops[b]) })
	return ids, nil
}

func revisionNotFound(name, field, version string, dropped []string) *Error {
	msg := fmt.Sprintf("CRD %q has no revision for version %q (%s)", name, version, field)
	if len(dropped) > 0 {
		msg = fmt.Sprintf("version %q of %s does not ship CRD %q (%s)", version, strings.Join(dropped, " and "), name, field)
	}
	return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: msg,
		Details: map[string]any{"kind": "crdRevision", "name": name, "version": version, "field": field}}
}
