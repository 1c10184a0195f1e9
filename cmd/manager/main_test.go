//go:build e2e

// The manager binary's tests: the command as users run it (built with the shipped flags), as
// separate processes over real PostgreSQL and SQLite databases and real kube-apiservers.
package main_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// binaryEnv names a prebuilt manager binary to test instead of building one.
const binaryEnv = "SLIPWAY_MANAGER_BINARY"

// managerBinary builds cmd/manager once per test binary, the way make build does.
func managerBinary(tb testing.TB) string {
	tb.Helper()
	return operatorproc.BinaryOf(tb, "./cmd/manager", binaryEnv)
}

// fleetSize is the number of servers of the test binary's fleet: enough for the rollout tests.
const fleetSize = 2

// fleet returns the test binary's kube-apiservers over one etcd, with workloads
// (testenv.WorkloadFleet: Deployments become Available, so rollouts complete), always fleetSize
// of them whatever the first caller asks; n is how many the caller needs.
func fleet(tb testing.TB, n int) *controlplane.Fleet {
	tb.Helper()
	if n > fleetSize {
		tb.Fatalf("the fleet has %d servers, %d asked for: raise fleetSize", fleetSize, n)
	}
	return testenv.WorkloadFleet(tb, fleetSize)
}

func TestMain(m *testing.M) {
	code := testenv.StopFleet(m.Run())
	if err := pgtest.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}
