package request

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// Target is a registered cluster a deployment may go to: its name and environment (Dev,
// Staging or Production).
type Target struct {
	Name        string
	Environment string
}

// Environments in promotion order, as the API spells them.
var Environments = []string{"Dev", "Staging", "Production"}

// EnvironmentRank is an environment's place in the promotion order (Dev 0, Staging 1,
// Production 2); an unknown one sorts last.
func EnvironmentRank(env string) int {
	if i := slices.Index(Environments, env); i >= 0 {
		return i
	}
	return len(Environments)
}

// SortTargets orders targets by environment (Dev → Staging → Production), then by name: the
// default order of every strategy.
func SortTargets(ts []Target) {
	slices.SortStableFunc(ts, func(a, b Target) int {
		return cmp.Or(cmp.Compare(EnvironmentRank(a.Environment), EnvironmentRank(b.Environment)), strings.Compare(a.Name, b.Name))
	})
}

// Limits on a request's lists and names.
const (
	MaxTargets    = 1000
	maxNameLength = 253
)

// Targets resolves r's clusters against known: the named clusters, or every known
// cluster of the named environments, sorted by environment then name. Errors: both or neither
// of clusters and environments, an empty list, an unknown or repeated name, an unknown
// environment or one without clusters.
func Targets(r *api.DeploymentRequest, known []Target) ([]Target, error) {
	switch {
	case r.Clusters != nil && r.Environments != nil:
		return nil, invalid.Reasoned("environments", "conflict", nil, "give clusters or environments, not both")
	case r.Clusters == nil && r.Environments == nil:
		return nil, &invalid.Error{Field: "clusters", Reason: "required", Message: "give clusters (names) or environments (Dev, Staging, Production)"}
	}
	byName := make(map[string]Target, len(known))
	for _, k := range known {
		byName[k.Name] = k
	}
	var out []Target
	if r.Clusters != nil {
		if len(r.Clusters) == 0 {
			return nil, &invalid.Error{Field: "clusters", Reason: "required", Message: "must name at least one cluster"}
		}
		if len(r.Clusters) > MaxTargets {
			return nil, invalid.Reasoned("clusters", "range", nil, "at most %d clusters, not %d", MaxTargets, len(r.Clusters))
		}
		seen := map[string]bool{}
		for i, n := range r.Clusters {
			field := fmt.Sprintf("clusters[%d]", i)
			t, ok := byName[n]
			switch {
			case n == "":
				return nil, &invalid.Error{Field: field, Reason: "required", Message: "empty cluster name"}
			case !ok:
				return nil, invalid.Reasoned(field, "notFound", nil, "no registered cluster %q", clip(n))
			case seen[n]:
				return nil, invalid.Reasoned(field, "duplicate", nil, "cluster %q is named twice", clip(n))
			}
			seen[n] = true
			out = append(out, t)
		}
	} else {
		if len(r.Environments) == 0 {
			return nil, &invalid.Error{Field: "environments", Reason: "required", Message: "must name at least one environment"}
		}
		seen := map[string]bool{}
		for i, env := range r.Environments {
			field := fmt.Sprintf("environments[%d]", i)
			switch {
			case !slices.Contains(Environments, env):
				return nil, invalid.Reasoned(field, "invalid", nil, "must be one of %s, not %q", strings.Join(Environments, ", "), clip(env))
			case seen[env]:
				return nil, invalid.Reasoned(field, "duplicate", nil, "environment %q is named twice", env)
			}
			seen[env] = true
			n := len(out)
			for _, k := range known {
				if k.Environment == env {
					out = append(out, k)
				}
			}
			if len(out) == n {
				return nil, invalid.Reasoned(field, "notFound", nil, "no registered cluster is in %s", env)
			}
		}
		if len(out) > MaxTargets {
			return nil, invalid.Reasoned("environments", "range", nil, "at most %d clusters, not %d", MaxTargets, len(out))
		}
	}
	SortTargets(out)
	return out, nil
}

func name(field, v string) error {
	switch {
	case v == "":
		return &invalid.Error{Field: field, Reason: "required", Message: "required"}
	case len(v) > maxNameLength:
		return invalid.Reasoned(field, "format", nil, "longer than %d characters", maxNameLength)
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return invalid.Reasoned(field, "format", nil, "%q must not contain spaces or control characters", clip(v))
	}
	return nil
}

func validateValues(r *api.DeploymentRequest) error {
	if err := object("values", r.Values); err != nil {
		return err
	}
	for _, env := range slices.Sorted(maps.Keys(r.ValuesByEnvironment)) {
		field := "valuesByEnvironment." + env
		if !slices.Contains(Environments, env) {
			return invalid.Reasoned(field, "invalid", nil, "keys must be environments (%s), not %q", strings.Join(Environments, ", "), clip(env))
		}
		if err := object(field, r.ValuesByEnvironment[env]); err != nil {
			return err
		}
	}
	return nil
}

// object accepts an absent or null value, or a JSON object.
func object(field string, raw json.RawMessage) error {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" || b[0] == '{' {
		return nil
	}
	return invalid.Reasoned(field, "format", nil, "must be a JSON object of Helm values")
}

// ClusterOrder is the Rolling order over targets: the clusters order names first, in its order,
// then the others in the default order (environment, then name). Every name in order must be a
// target, named once; errors name "rollingConfig.clusterOrder[i]".
func ClusterOrder(order []string, targets []Target) ([]Target, error) {
	byName := make(map[string]Target, len(targets))
	for _, t := range targets {
		byName[t.Name] = t
	}
	out := make([]Target, 0, len(targets))
	seen := map[string]bool{}
	for i, n := range order {
		field := fmt.Sprintf("rollingConfig.clusterOrder[%d]", i)
		t, ok := byName[n]
		switch {
		case !ok:
			return nil, invalid.Reasoned(field, "notFound", nil, "%q is not a target cluster of this deployment", clip(n))
		case seen[n]:
			return nil, invalid.Reasoned(field, "duplicate", nil, "cluster %q is named twice", clip(n))
		}
		seen[n] = true
		out = append(out, t)
	}
	rest := make([]Target, 0, len(targets)-len(out))
	for _, t := range targets {
		if !seen[t.Name] {
			rest = append(rest, t)
		}
	}
	SortTargets(rest)
	return append(out, rest...), nil
}
