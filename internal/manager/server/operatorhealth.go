package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// healthUnknown is the overall health of an operator that has no health check recorded yet
// (it was never deployed, or the first check has not run): neither a pass nor a failure.
const healthUnknown = health.Unknown

// getOperatorHealth is the latest health of an operator on every cluster it was checked on: the
// design's shape (api.OperatorHealth); overallHealth Unknown with no clusters before any check.
func (s *Server) getOperatorHealth(w http.ResponseWriter, r *http.Request) error {
	ctx, name := r.Context(), r.PathValue("name")
	clusters, err := s.operatorHealth(r, name, "")
	if err != nil {
		return err
	}
	overall := health.Overall(name, clusters)
	if len(clusters) == 0 {
		overall.OverallHealth = healthUnknown
	}
	out, err := healthOut[api.OperatorHealth](overall)
	if err != nil {
		return err
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

// getClusterOperatorHealth is the latest health of an operator on one cluster: the design's
// cluster entry with operatorName (api.ClusterOperatorHealth); 404 before the first check there.
func (s *Server) getClusterOperatorHealth(w http.ResponseWriter, r *http.Request) error {
	ctx, name, cluster := r.Context(), r.PathValue("name"), r.PathValue("cluster")
	if _, err := s.store.ClusterGetByName(ctx, cluster); errors.Is(err, store.ErrNotFound) {
		return errNotFound("cluster", cluster)
	} else if err != nil {
		return err
	}
	clusters, err := s.operatorHealth(r, name, cluster)
	if err != nil {
		return err
	}
	if len(clusters) == 0 {
		return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound,
			Message: fmt.Sprintf("operator %q has no health check on cluster %q yet", name, cluster),
			Details: map[string]any{"kind": "operatorHealth", "name": name, "cluster": cluster}}
	}
	out, err := healthOut[api.ClusterOperatorHealth](health.ClusterOperatorHealth{OperatorName: name, ClusterHealth: clusters[0]})
	if err != nil {
		return err
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

// operatorHealth reads the stored checks of operator name (on cluster, or on all when it is ""):
// 404 for an unknown operator.
func (s *Server) operatorHealth(r *http.Request, name, cluster string) ([]health.ClusterHealth, error) {
	ctx := r.Context()
	if _, err := s.store.OperatorGetByName(ctx, name); errors.Is(err, store.ErrNotFound) {
		return nil, errNotFound("operator", name)
	} else if err != nil {
		return nil, err
	}
	records, err := s.store.OperatorHealthList(ctx, &store.OperatorHealthListParams{OperatorName: name, ClusterName: cluster})
	if err != nil {
		return nil, err
	}
	clusters := make([]health.ClusterHealth, 0, len(records))
	for _, rec := range records {
		clusters = append(clusters, clusterHealthOf(rec))
	}
	return clusters, nil
}

// clusterHealthOf is a stored check as the design shows it: the check's result, with the
// cluster, health and time of the record (which the store keeps as columns). A result that does
// not decode still shows the record's cluster, health and time, its parts Unknown.
func clusterHealthOf(rec *store.OperatorHealth) health.ClusterHealth {
	ch, err := health.DecodeResult(rec.Result)
	if err != nil {
		ch = health.NotCheckedOn(rec.ClusterName, "the stored result does not decode: "+err.Error(), rec.CheckedAt)
	}
	ch.ClusterName, ch.Health, ch.LastChecked = rec.ClusterName, health.Health(rec.Health), rec.CheckedAt
	return ch
}

// healthOut is a health checker's result (package health's types) as the API shows it: the wire
// types (package api) have the same fields and JSON, so the value goes through its JSON, and a
// field the checker gained that the wire types lack is an error, never dropped without a word
// (TestHealthOut_LosesNothing).
func healthOut[T api.OperatorHealth | api.ClusterOperatorHealth](v any) (T, error) {
	var out T
	data, err := json.Marshal(v)
	if err != nil {
		return out, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return out, fmt.Errorf("operator health in the API's types: %w", err)
	}
	return out, nil
}
