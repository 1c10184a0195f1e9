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
// by the first test that asks and stopped by StopFleet in TestMain; fleetWorkloads tells whether it
// runs workloads (WorkloadFleet).
var (
	fleetMu        sync.Mutex
	fleetVal       *controlplane.Fleet
	fleetLogs      string
	fleetWorkloads bool
)

// Fleet returns the test binary's fleet of n kube-apiservers, starting it on first use (3
// minutes at most). A later call asking for more servers than the first started fails: size the
// fleet for the largest user. A fleet WorkloadFleet started serves too.
func Fleet(tb testing.TB, n int) *controlplane.Fleet {
	tb.Helper()
	return sharedFleet(tb, n, false)
}

// WorkloadFleet is Fleet with workloads (controlplane.FleetOptions.Workloads): every server also
// runs kube-controller-manager, kube-scheduler and kwok with one Ready fake node
// (FleetServer.NodeName), so Deployments become Available. It costs about 200 MiB and three
// processes more per server than Fleet: a test binary uses one or the other, and a call after
// Fleet started the shared fleet fails.
func WorkloadFleet(tb testing.TB, n int) *controlplane.Fleet {
	tb.Helper()
	return sharedFleet(tb, n, true)
}

func sharedFleet(tb testing.TB, n int, workloads bool) *controlplane.Fleet {
	tb.Helper()
	fleetMu.Lock()
	defer fleetMu.Unlock()
	if fleetVal != nil {
		if workloads && !fleetWorkloads {
			tb.Fatalf("the fleet was started without workloads (testenv.Fleet), testenv.WorkloadFleet asked " +
				"for them: call WorkloadFleet everywhere in this test binary")
		}
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
	// Ten servers with workloads start in about 20 s on two idle cores; leave room for a busy machine.
	timeout := 3 * time.Minute
	if workloads {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	f, err := controlplane.StartFleet(ctx, controlplane.FleetOptions{Servers: n, LogDir: dir, Workloads: workloads})
	if err != nil {
		what := "kube-apiservers"
		if workloads {
			what = "clusters with workloads"
		}
		tb.Fatalf("starting %d %s: %v (logs in %s)", n, what, err, dir)
	}
	fleetVal, fleetWorkloads = f, workloads
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
		fleetVal, fleetWorkloads = nil, false
	}
	if fleetLogs != "" {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "fleet logs kept in %s\n%s", fleetLogs, controlplane.LogTails(fleetLogs, 15))
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
