package server

import (
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestWireEnums_MatchStore: the API's deployment statuses and environments are the store's.
func TestWireEnums_MatchStore(t *testing.T) {
	var statuses, envs []string
	for _, s := range store.DeploymentStatuses {
		statuses = append(statuses, string(s))
	}
	for _, e := range store.Environments {
		envs = append(envs, string(e))
	}
	if !slices.Equal(statuses, api.DeploymentStatuses) || !slices.Equal(envs, api.Environments) {
		t.Fatalf("api: %v %v; store: %v %v", api.DeploymentStatuses, api.Environments, statuses, envs)
	}
}
