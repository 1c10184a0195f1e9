//go:build e2e

package chaos

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// scale is the size of one run of the suites.
type scale struct {
	name string
	// WerfBundle: bundles, operator kills.
	bundles, bundleKills int
	// Catalyst: Environments created, deleted among them, operator kills.
	envs, envDeletes, envKills int
	// WebApp: WebApps, rounds of image and replica changes, leader kills.
	webapps, webappRounds, webappKills int
	// converge bounds every wait for convergence: generous, never a measured figure.
	converge time.Duration
}

var scales = map[string]scale{
	"full": {name: "full", bundles: 500, bundleKills: 10, envs: 50, envDeletes: 25, envKills: 10,
		webapps: 200, webappRounds: 6, webappKills: 6, converge: 30 * time.Minute},
	"short": {name: "short", bundles: 50, bundleKills: 3, envs: 10, envDeletes: 5, envKills: 3,
		webapps: 20, webappRounds: 3, webappKills: 3, converge: 10 * time.Minute},
}

// chaosScale reads SLIPWAY_CHAOS_SCALE: short (the default, so make test and a plain go test run
// the short form) or full (what make chaos sets).
func chaosScale(t *testing.T) scale {
	t.Helper()
	name := os.Getenv("SLIPWAY_CHAOS_SCALE")
	if name == "" {
		name = "short"
	}
	s, ok := scales[name]
	if !ok {
		t.Fatalf("SLIPWAY_CHAOS_SCALE=%q: want full or short", name)
	}
	// The short form runs its suites side by side (each has its own control plane) to stay a
	// small part of make test; the full form one at a time, so each has the machine to itself.
	if s.name == "short" {
		t.Parallel()
	}
	fmt.Printf("chaos: %s scale\n", s.name)
	return s
}
