package server

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	rolloutengine "github.com/slipway-dev/slipway/internal/manager/rollout/engine"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// getFleet answers the whole grid from four reads (operators with their versions, clusters, the
// live releases, the latest health checks), whatever its size: no query per cell.
func (s *Server) getFleet(w http.ResponseWriter, r *http.Request) error {
	env, err := oneOf(r, "environment", environmentEnum)
	if err != nil {
		return err
	}
	ctx := r.Context()
	ops, latest, err := s.fleetOperators(ctx)
	if err != nil {
		return err
	}
	clusters, err := s.fleetClusters(ctx, store.Environment(env))
	if err != nil {
		return err
	}
	lives, err := s.store.LiveReleaseList(ctx, &store.LiveReleaseListParams{})
	if err != nil {
		return err
	}
	checks, err := s.store.OperatorHealthList(ctx, &store.OperatorHealthListParams{})
	if err != nil {
		return err
	}
	out := api.Fleet{Operators: ops, Clusters: clusters, Cells: fleetCells(lives, checks, latest, clusters, s.now())}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

// fleetOperators lists every operator with its deployable versions (one query for all versions
// of a page of operators), and each operator's latest version by name.
func (s *Server) fleetOperators(ctx context.Context) ([]api.FleetOperator, map[string]string, error) {
	out := []api.FleetOperator{}
	latest := map[string]string{}
	after := ""
	for {
		page, err := s.store.OperatorList(ctx, &store.OperatorListParams{After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, nil, err
		}
		ids := make([]string, len(page))
		for i, op := range page {
			ids[i] = op.ID
		}
		versions, err := s.store.OperatorVersionListMany(ctx, ids)
		if err != nil {
			return nil, nil, err
		}
		for _, op := range page {
			o := operatorOut(op, versions[op.ID])
			fo := api.FleetOperator{Name: op.Name, Namespace: op.Namespace, Versions: o.Versions}
			if len(o.Versions) > 0 {
				fo.LatestVersion = o.Versions[0]
			}
			latest[op.Name] = fo.LatestVersion
			out = append(out, fo)
		}
		if len(page) < store.MaxLimit {
			return out, latest, nil
		}
		after = page[len(page)-1].Name
	}
}

// fleetClusters lists the clusters (of env when it is set) by environment, then name.
func (s *Server) fleetClusters(ctx context.Context, env store.Environment) ([]api.FleetCluster, error) {
	out := []api.FleetCluster{}
	after := ""
	for {
		page, err := s.store.ClusterList(ctx, &store.ClusterListParams{Environment: env, After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			out = append(out, api.FleetCluster{Name: c.Name, Environment: string(c.Environment), Health: string(c.Health),
				HealthReason: c.HealthReason, KubernetesVersion: c.KubernetesVersion, LastChecked: c.HealthCheckedAt})
		}
		if len(page) < store.MaxLimit {
			break
		}
		after = page[len(page)-1].Name
	}
	slices.SortStableFunc(out, func(a, b api.FleetCluster) int {
		return cmp.Or(cmp.Compare(environmentRank(a.Environment), environmentRank(b.Environment)), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

func environmentRank(env string) int {
	return slices.Index(store.Environments, store.Environment(env))
}

// fleetCells joins the live releases of the listed operators on the listed clusters with the
// latest health checks.
func fleetCells(lives []*store.LiveRelease, checks []*store.OperatorHealth, latest map[string]string, clusters []api.FleetCluster, now time.Time) []api.FleetCell {
	type key struct{ op, cluster string }
	byKey := make(map[key]*store.OperatorHealth, len(checks))
	for _, c := range checks {
		byKey[key{c.OperatorName, c.ClusterName}] = c
	}
	rank := make(map[string]int, len(clusters))
	for i, c := range clusters {
		rank[c.Name] = i
	}
	cells := make([]api.FleetCell, 0, len(lives))
	for _, l := range lives {
		newest, listed := latest[l.OperatorName]
		if _, ok := rank[l.ClusterName]; !ok || !listed {
			continue // a deleted operator, or a cluster gone or filtered out
		}
		cell := api.FleetCell{Operator: l.OperatorName, Cluster: l.ClusterName, Environment: string(l.Environment), Version: l.Version,
			LatestVersion: newest, Drift: drift(l.Version, newest), Health: string(healthUnknown), DeploymentID: l.DeploymentID,
			HelmRevision: l.HelmRevision, OnUnhealthy: "rollback"}
		if until, why := rolloutengine.RollbackScope(l, now); why != "" {
			cell.OnUnhealthy, cell.AlertReason = "alert", why
		} else {
			cell.RollbackUntil = &until
		}
		if c := byKey[key{l.OperatorName, l.ClusterName}]; c != nil {
			at := c.CheckedAt
			cell.Health, cell.CheckedAt = c.Health, &at
			if api.HealthState(c.Health) != api.Healthy {
				cell.HealthReason = healthReason(c)
			}
		}
		cells = append(cells, cell)
	}
	slices.SortStableFunc(cells, func(a, b api.FleetCell) int {
		return cmp.Or(cmp.Compare(a.Operator, b.Operator), cmp.Compare(rank[a.Cluster], rank[b.Cluster]))
	})
	return cells
}

// drift is behind when version is older than latest (semver; versions that do not parse are
// compared as text), current otherwise.
func drift(version, latest string) string {
	if latest == "" || version == latest {
		return "current"
	}
	v, err1 := semver.NewVersion(version)
	l, err2 := semver.NewVersion(latest)
	if err1 == nil && err2 == nil {
		if v.LessThan(l) {
			return "behind"
		}
		return "current"
	}
	if version < latest {
		return "behind"
	}
	return "current"
}

// healthReason names the parts of a stored check that are not healthy, with their first message.
func healthReason(rec *store.OperatorHealth) string {
	return health.Problems(clusterHealthOf(rec))
}
