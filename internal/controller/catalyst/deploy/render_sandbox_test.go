package deploy_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// The test binary, started with sandboxProbeEnv set, runs deploy.SandboxProbe instead of tests.
const (
	sandboxProbeEnv     = "SLIPWAY_TEST_SANDBOX_PROBE"
	sandboxProbeAddrEnv = "SLIPWAY_TEST_SANDBOX_PROBE_ADDR"
)

// runProbe runs the probe in a child process and returns its lines by attempt.
func runProbe(t *testing.T, mode, addr string) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{sandboxProbeEnv + "=" + mode, sandboxProbeAddrEnv + "=" + addr, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the %s probe: %v\n%s", mode, err, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		what, outcome, _ := strings.Cut(l, ": ")
		lines[what] = outcome
	}
	return lines
}

// TestRender_TheRendererCannotOpenASocketOrExec: confined as the renderer confines itself (the
// seccomp filter it installs before it reads its request), a process cannot open a socket of any
// family, connect to a listening server, fetch a URL or start a program, and the server counts no
// connection. The same probe unconfined opens, connects, fetches and starts all of them.
func TestRender_TheRendererCannotOpenASocketOrExec(t *testing.T) {
	var conns, requests atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	attempts := []string{"socket AF_INET", "socket AF_INET6", "socket AF_UNIX", "socket AF_NETLINK", "socketpair", "dial", "http get", "exec", "io_uring_setup"}

	free := runProbe(t, "free", addr)
	for _, a := range attempts {
		if a == "io_uring_setup" && free[a] != "ok" {
			continue // a kernel or container without io_uring: nothing to show unconfined
		}
		if free[a] != "ok" {
			t.Errorf("unconfined, %s: %q, want ok (the probe itself is broken)", a, free[a])
		}
	}
	before := conns.Load()
	if before == 0 || requests.Load() == 0 {
		t.Fatalf("the unconfined probe made %d connections and %d requests, want some", before, requests.Load())
	}

	confined := runProbe(t, "confined", addr)
	for _, a := range attempts {
		if a == "http get" {
			continue // net/http's transport is the renderer's own: below
		}
		if !strings.Contains(confined[a], "operation not permitted") {
			t.Errorf("confined, %s: %q, want operation not permitted", a, confined[a])
		}
	}
	if !strings.Contains(confined["http get"], "a render makes no network request") {
		t.Errorf("confined, http get: %q does not say a render makes no network request", confined["http get"])
	}
	if n := conns.Load() - before; n != 0 {
		t.Errorf("the confined probe made %d connections", n)
	}
}

// TestRender_TheRendererIsConfinedBeforeItReadsItsRequest: the renderer itself (this binary
// started as the operator starts it) has, while it waits for its request, no_new_privs and the
// seccomp filter on every one of its threads, so nothing of the request runs unconfined.
func TestRender_TheRendererIsConfinedBeforeItReadsItsRequest(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"SLIPWAY_CATALYST_RENDERER=1", "GOMAXPROCS=1", "GOTRACEBACK=single"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	task := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task"
	// The renderer's filter comes on top of any this process runs under (a container's profile).
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"NoNewPrivs:\t1", "Seccomp:\t2"}
	if n, ok := statusField(string(self), "Seccomp_filters"); ok {
		want = append(want, "Seccomp_filters:\t"+strconv.Itoa(n+1))
	} else if m, _ := statusField(string(self), "Seccomp"); m != 0 {
		t.Fatalf("this process runs under a seccomp filter and the kernel does not count them: nothing would show the renderer's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testenv.Eventually(ctx, t, "every thread of the renderer confined", func() (bool, error) {
		threads, err := os.ReadDir(task)
		if err != nil {
			return false, err
		}
		for _, th := range threads {
			status, err := os.ReadFile(task + "/" + th.Name() + "/status")
			if err != nil {
				return false, err
			}
			for _, want := range want {
				if !strings.Contains(string(status), want+"\n") {
					return false, fmt.Errorf("thread %s of %d: no %q", th.Name(), len(threads), want)
				}
			}
		}
		return len(threads) > 1, fmt.Errorf("%d threads", len(threads))
	})
	_ = stdin.Close() // no request: the renderer answers so and ends
	if err := cmd.Wait(); err == nil || !strings.Contains(out.String(), "reading the render request") {
		t.Errorf("the renderer ended with %v, answering %q; want it to say it read no request", err, out.String())
	}
}

// statusField is the number of field in a /proc/<pid>/status.
func statusField(status, field string) (int, bool) {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, field+":\t"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}
