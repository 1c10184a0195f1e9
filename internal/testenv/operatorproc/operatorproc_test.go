//go:build e2e

package operatorproc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e }) }

// TestProcess_KillRestartMeasure runs the built operator under its RBAC identity: it becomes
// ready, reports its RSS and metrics, dies on Kill without a graceful exit, comes back ready on
// Restart with the same ports, and exits with status 0 on Stop.
func TestProcess_KillRestartMeasure(t *testing.T) {
	// The binary first: a cold build takes minutes, which must not count against the deadline.
	operatorproc.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kubeconfig, err := env.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	p := operatorproc.Start(t, operatorproc.Binary(t), operatorproc.Options{
		Kubeconfig: kubeconfig,
		Args:       []string{"--namespace=" + controlplane.OperatorNamespace, "--controllers=werfbundle", "--leader-elect=false"},
	})
	p.WaitReady(ctx, t)
	cur, peak, err := p.RSS()
	if err != nil {
		t.Fatal(err)
	}
	if cur <= 0 || peak < cur {
		t.Errorf("RSS %d, peak %d: want 0 < RSS <= peak", cur, peak)
	}
	families, err := p.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if operatorproc.Sum(families, "rest_client_requests_total", nil) == 0 {
		t.Error("no rest_client_requests_total in the operator's metrics")
	}

	firstPid := p.Pid()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("running after Kill")
	}
	if status, ok := p.Err().(interface{ Sys() any }); !ok || status.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("ended with %v after Kill, want killed by SIGKILL", p.Err())
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	p.WaitReady(ctx, t)
	if p.Pid() == firstPid || p.Starts() != 2 {
		t.Errorf("pid %d (was %d), %d starts: want a new process, 2 starts", p.Pid(), firstPid, p.Starts())
	}
	if p.PeakRSS() < peak {
		t.Errorf("PeakRSS %d is below the first process's peak %d", p.PeakRSS(), peak)
	}
	if err := p.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// TestShippedBuildFlags_MatchTheReleaseBuilds keeps the harness's build of the operator equal to
// the released one: the Dockerfile's image build and make build use ShippedBuildFlags with cgo
// off, so the processes tests and benchmarks measure are the binary users run.
func TestShippedBuildFlags_MatchTheReleaseBuilds(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, file := range []string{"Dockerfile", "Makefile"} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		var line string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, " build ") && strings.Contains(l, "-trimpath") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("%s: no release go build line", file)
		}
		want := []string{"CGO_ENABLED=0"}
		for _, f := range operatorproc.ShippedBuildFlags {
			if k, v, ok := strings.Cut(f, "="); ok && strings.Contains(v, " ") {
				f = k + `="` + v + `"`
			}
			want = append(want, f)
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("%s builds with %q, which lacks %s: keep it and operatorproc.ShippedBuildFlags equal", file, strings.TrimSpace(line), w)
			}
		}
	}
}
