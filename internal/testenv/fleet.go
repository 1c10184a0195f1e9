package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/controlplane"
)

// The test binary's shared fleet: kube-apiservers over one etcd (controlplane.StartFleet), started
// by the first test that asks and stopped by StopFleet in TestMain.
var (
	fleetMu   sync.Mutex
	fleetVal  *controlplane.Fleet
	fleetLogs string
)

// Fleet returns the test binary's fleet of n kube-apiservers, starting it on first use (3
// minutes at most). A later call asking for more servers than the first started fails: size the
// fleet for the largest user.
func Fleet(tb testing.TB, n int) *controlplane.Fleet {
	tb.Helper()
	fleetMu.Lock()
	defer fleetMu.Unlock()
	if fleetVal != nil {
		if len(fleetVal.Servers) < n {
			tb.Fatalf("the fleet has %d servers, %d asked for", len(fleetVal.Servers), n)
		}
		return fleetVal
	}
	dir, err := os.MkdirTemp("", "slipway-fleet-")
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

// StopFleet stops the shared fleet, if one was started, and returns the exit code for
// TestMain: code, or 1 when stopping failed. Its logs are removed after a passing run and kept
// (and printed) after a failing one.
func StopFleet(code int) int {
	fleetMu.Lock()
	defer fleetMu.Unlock()
	if fleetVal != nil {
		if err := fleetVal.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the fleet: %v\n", err)
			code = 1
		}
		fleetVal = nil
	}
	if fleetLogs != "" {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "kube-apiserver logs kept in %s\n", fleetLogs)
		} else {
			_ = os.RemoveAll(fleetLogs)
		}
		fleetLogs = ""
	}
	return code
}

// RunningFleet is the shared fleet when a test has started it, else nil.
func RunningFleet() *controlplane.Fleet {
	fleetMu.Lock()
	defer fleetMu.Unlock()
	return fleetVal
}
