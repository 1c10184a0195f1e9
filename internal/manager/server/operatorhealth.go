package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// healthUnknown is the overall health of an operator that has no health check recorded yet
// (it was never deployed, or the first check has not run): neither a pass nor a failure.
const healthUnknown = api.HealthUnknown

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
	writeJSON(ctx, s.log, w, http.StatusOK, overall)
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
	writeJSON(ctx, s.log, w, http.StatusOK, api.ClusterOperatorHealth{OperatorName: name, OperatorHealthCheck: clusters[0]})
	return nil
}

// operatorHealth reads the stored checks of operator name (on cluster, or on all when it is ""):
// 404 for an unknown operator.
func (s *Server) operatorHealth(r *http.Request, name, cluster string) ([]api.OperatorHealthCheck, error) {
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
	clusters := make([]api.OperatorHealthCheck, 0, len(records))
	for _, rec := range records {
		clusters = append(clusters, clusterHealthOf(rec))
	}
	return clusters, nil
}

// clusterHealthOf is a stored check as the design shows it: the check's result, with the
// cluster, health and time of the record (which the store keeps as columns). A result that does
// not decode still shows the record's cluster, health and time, its parts Unknown.
func clusterHealthOf(rec *store.OperatorHealth) api.OperatorHealthCheck {
	ch, err := health.DecodeResult(rec.Result)
	if err != nil {
		ch = health.NotCheckedOn(rec.ClusterName, "the stored result does not decode: "+err.Error(), rec.CheckedAt)
	}
	ch.ClusterName, ch.Health, ch.LastChecked = rec.ClusterName, api.HealthState(rec.Health), rec.CheckedAt
	return ch
}
