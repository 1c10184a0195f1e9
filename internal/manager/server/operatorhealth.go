package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// healthUnknown is the overall health of an operator that has no health check recorded yet
// (it was never deployed, or the first check has not run): neither a pass nor a failure.
const healthUnknown health.Health = "Unknown"

// getOperatorHealth is the latest health of an operator on every cluster it was checked on.
func (s *Server) getOperatorHealth(w http.ResponseWriter, r *http.Request) error {
	return s.operatorHealth(w, r, "")
}

// getClusterOperatorHealth is the latest health of an operator on one cluster.
func (s *Server) getClusterOperatorHealth(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("cluster")
	if _, err := s.store.ClusterGetByName(r.Context(), name); errors.Is(err, store.ErrNotFound) {
		return errNotFound("cluster", name)
	} else if err != nil {
		return err
	}
	return s.operatorHealth(w, r, name)
}

// operatorHealth answers the design's shape (health.OperatorHealth) from the stored checks: 404
// for an unknown operator, overallHealth Unknown with no clusters before any check.
func (s *Server) operatorHealth(w http.ResponseWriter, r *http.Request, cluster string) error {
	ctx, name := r.Context(), r.PathValue("name")
	if _, err := s.store.OperatorGetByName(ctx, name); errors.Is(err, store.ErrNotFound) {
		return errNotFound("operator", name)
	} else if err != nil {
		return err
	}
	records, err := s.store.OperatorHealthList(ctx, &store.OperatorHealthListParams{OperatorName: name, ClusterName: cluster})
	if err != nil {
		return err
	}
	clusters := make([]health.ClusterHealth, 0, len(records))
	for _, rec := range records {
		clusters = append(clusters, clusterHealthOf(rec))
	}
	out := health.Overall(name, clusters)
	if len(clusters) == 0 {
		out.OverallHealth = healthUnknown
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

// clusterHealthOf is a stored check as the design shows it: the check's result, with the
// cluster, health and time of the record (which the store keeps as columns).
func clusterHealthOf(rec *store.OperatorHealth) health.ClusterHealth {
	var ch health.ClusterHealth
	if len(rec.Result) > 0 {
		// A result that does not decode still shows the record's cluster, health and time.
		_ = json.Unmarshal(rec.Result, &ch)
	}
	ch.ClusterName, ch.Health, ch.LastChecked = rec.ClusterName, health.Health(rec.Health), rec.CheckedAt
	return ch
}
