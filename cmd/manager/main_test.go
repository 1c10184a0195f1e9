//go:build e2e

// The manager binary's tests: the command as users run it (built with the shipped flags), as
// separate processes over real PostgreSQL and SQLite databases and real kube-apiservers.
package main_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// binaryEnv names a prebuilt manager binary to test instead of building one.
const binaryEnv = "SLIPWAY_MANAGER_BINARY"

// managerBinary builds cmd/manager once per test binary, the way make build does.
func managerBinary(tb testing.TB) string {
	tb.Helper()
	return operatorproc.BinaryOf(tb, "./cmd/manager", binaryEnv)
}

// The tests' clusters: kube-apiservers over one etcd, started on first use, stopped by TestMain.
var (
	fleetMu   sync.Mutex
	fleetVal  *controlplane.Fleet
	fleetLogs string
)

// fleet returns a fleet of at least n servers; the first call decides the size (later calls may
// not ask for more).
func fleet(tb testing.TB, n int) *controlplane.Fleet {
	tb.Helper()
	fleetMu.Lock()
	defer fleetMu.Unlock()
	if fleetVal != nil {
		if len(fleetVal.Servers) < n {
			tb.Fatalf("the fleet has %d servers, %d asked for", len(fleetVal.Servers), n)
		}
		return fleetVal
	}
	dir, err := os.MkdirTemp("", "slipway-manager-fleet-")
	if err != nil {
		tb.Fatal(err)
	}
	fleetLogs = dir
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, err := controlplane.StartFleet(ctx, controlplane.FleetOptions{Servers: n, LogDir: dir})
	if err != nil {
		tb.Fatalf("starting %d kube-apiservers: %v (logs in %s)", n, err, dir)
	}
	fleetVal = f
	return f
}

func TestMain(m *testing.M) {
	code := m.Run()
	fleetMu.Lock()
	if fleetVal != nil {
		if err := fleetVal.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the fleet: %v\n", err)
			code = max(code, 1)
		}
	}
	if fleetLogs != "" {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "kube-apiserver logs kept in %s\n", fleetLogs)
		} else {
			_ = os.RemoveAll(fleetLogs)
		}
	}
	fleetMu.Unlock()
	if err := pgtest.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}
