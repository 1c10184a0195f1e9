package engine

import (
	"flag"
	"os"
	"testing"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// fleetSize is the package's clusters: kube-apiservers over one etcd, each with its own
// controller-manager, scheduler and kwok (testenv.WorkloadFleet), so operator Deployments
// become Available and their pods Ready, restart or crash-loop as the kwok stages say. A run
// with benchmarks (-test.bench) starts canaryClusters instead, BenchmarkCanaryDesign's fleet.
var fleetSize = 4

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		fleetSize = max(fleetSize, canaryClusters)
	}
	os.Exit(testenv.StopFleet(m.Run()))
}

// servers returns the first n fleet servers as deployment targets.
func servers(t testing.TB, n int) []server {
	t.Helper()
	f := testenv.WorkloadFleet(t, fleetSize)
	out := make([]server, n)
	for i := range n {
		out[i] = server{Kubeconfig: f.Servers[i].Kubeconfig, Config: f.Servers[i].Config}
	}
	return out
}

// single is the fleet's first server as a deployment target.
func single(t *testing.T) server { return servers(t, 1)[0] }
