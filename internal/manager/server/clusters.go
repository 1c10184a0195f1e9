package server

import (
	"errors"
	"net/http"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) error {
	var req api.ClusterRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	c, err := s.clusters.Register(ctx, clusters.RegisterParams{
		Name: req.Name, Environment: store.Environment(req.Environment), Kubeconfig: []byte(req.Kubeconfig),
	})
	entry := audit.Entry{Action: "cluster.create", TargetKind: "cluster", TargetName: req.Name, Result: resultOf(err),
		Details: map[string]any{"environment": req.Environment}}
	if err != nil {
		if e, ok := invalid.As(err); ok {
			entry.Details["field"], entry.Details["reason"] = e.Field, e.Reason
		}
		s.audit.Record(ctx, entry)
		if errors.Is(err, store.ErrAlreadyExists) {
			return errAlreadyExists("cluster", req.Name)
		}
		return err
	}
	entry.Details["kubernetesVersion"] = c.KubernetesVersion
	s.audit.Record(ctx, entry)
	telemetry.ClusterRegistered()
	writeJSON(ctx, s.log, w, http.StatusCreated, clusterOut(c))
	return nil
}

func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	env, err := oneOf(r, "environment", environmentEnum)
	if err != nil {
		return err
	}
	health, err := oneOf(r, "health", []string{string(store.HealthUnknown), string(store.HealthHealthy), string(store.HealthUnhealthy)})
	if err != nil {
		return err
	}
	list, err := s.store.ClusterList(r.Context(), &store.ClusterListParams{
		Environment: store.Environment(env), Health: store.Health(health), After: p.After, Limit: p.Limit,
	})
	if err != nil {
		return err
	}
	out := api.ClusterList{Items: make([]api.Cluster, 0, len(list))}
	for _, c := range list {
		out.Items = append(out.Items, clusterOut(c))
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].Name)
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) error {
	c, err := s.clusterByName(r)
	if err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, clusterOut(c))
	return nil
}

func (s *Server) getClusterHealth(w http.ResponseWriter, r *http.Request) error {
	refresh, err := oneOf(r, "refresh", []string{"true", "false"})
	if err != nil {
		return err
	}
	var c *store.Cluster
	if refresh == "true" {
		ctx, name := r.Context(), r.PathValue("name")
		c, err = s.clusters.Check(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return errNotFound("cluster", name)
		}
		s.audit.Record(ctx, audit.Entry{Action: "cluster.access", TargetKind: "cluster", TargetName: name,
			Result: resultOf(err), Details: map[string]any{"purpose": "health check"}})
	} else {
		c, err = s.clusterByName(r)
	}
	if err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, api.ClusterHealth{
		Name: c.Name, Health: string(c.Health), Reason: c.HealthReason, KubernetesVersion: c.KubernetesVersion,
		LastChecked: c.HealthCheckedAt,
	})
	return nil
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ctx := r.Context()
	removal, err := s.clusters.Remove(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("cluster", name)
	}
	entry := audit.Entry{Action: "cluster.delete", TargetKind: "cluster", TargetName: name, Result: resultOf(err)}
	if removal != nil {
		// The cluster is removed from the manager either way; what was left in it is recorded.
		entry.Details = map[string]any{"cleanedUp": removal.CleanedUp}
		if !removal.CleanedUp {
			entry.Details["problem"] = removal.Problem
		}
	}
	s.audit.Record(ctx, entry)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) clusterByName(r *http.Request) (*store.Cluster, error) {
	name := r.PathValue("name")
	c, err := s.store.ClusterGetByName(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNotFound("cluster", name)
	}
	return c, err
}

func clusterOut(c *store.Cluster) api.Cluster {
	return api.Cluster{
		Name: c.Name, Environment: string(c.Environment), KubernetesVersion: c.KubernetesVersion,
		Health: string(c.Health), HealthReason: c.HealthReason, LastChecked: c.HealthCheckedAt, CreatedAt: c.CreatedAt,
	}
}

// resultOf is the audit result of an operation's error.
func resultOf(err error) string {
	var apiErr *Error
	switch {
	case err == nil:
		return audit.Success
	case errors.As(err, &apiErr):
		if apiErr.Status < http.StatusInternalServerError {
			return audit.Invalid
		}
		return audit.Failed
	case errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict):
		return audit.Invalid
	}
	if _, ok := invalid.As(err); ok {
		return audit.Invalid
	}
	return audit.Failed
}

// addRefusal adds to an audit record's details the field and reason of a refusal for bad input.
func addRefusal(details map[string]any, err error) {
	var apiErr *Error
	if e, ok := invalid.As(err); ok {
		details["field"], details["reason"] = e.Field, e.Reason
	} else if errors.As(err, &apiErr) && apiErr.Status < http.StatusInternalServerError {
		details["refused"] = apiErr.Message
	}
}
