package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/slipway-dev/slipway/internal/devenv"
	"github.com/slipway-dev/slipway/internal/procid"
)

// A pid file left behind by a crash names a PID that may belong to any process now. down and the
// check up makes first report it and remove it; they signal nothing, neither the process that
// holds the number nor its group. The stranger here is a live `sleep` leading its own process
// group, the worst case: the PID alone, and the group named by it, both reach it.
func TestDown_StalePidFileSignalsNoStranger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content func(stranger procid.Identity) string
		report  string
	}{
		{
			name:    "its PID now another process's",
			content: func(s procid.Identity) string { s.Start--; return s.String() + "\n" },
			report:  "Removed the stale",
		},
		{
			name: "its PID now another process's, in an earlier boot",
			content: func(s procid.Identity) string {
				s.Boot = "0e0e0e0e-0000-0000-0000-000000000000"
				return s.String() + "\n"
			},
			report: "Removed the stale",
		},
		{
			name:    "a bare PID, as devenv wrote before",
			content: func(s procid.Identity) string { return strconv.Itoa(s.PID) },
			report:  "does not identify a process",
		},
	} {
		for _, step := range []struct {
			name string
			run  func(devenv.Options) error
			out  string
		}{
			{name: "down", run: down, out: "==> Nothing to stop"},
			{name: "the check before up", run: refuseRunning},
		} {
			t.Run(tc.name+"/"+step.name, func(t *testing.T) {
				stranger := startStranger(t)
				dir := t.TempDir()
				path := filepath.Join(dir, pidFile)
				if err := os.WriteFile(path, []byte(tc.content(stranger.ID)), 0o644); err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				if err := step.run(devenv.Options{Dir: dir, Out: &out}); err != nil {
					t.Fatalf("%s: %v\n%s", step.name, err, out.String())
				}
				if stranger.Wait(0) {
					t.Fatalf("the stranger holding the pid file's PID %d was ended\n%s", stranger.ID.PID, out.String())
				}
				if err := stranger.Signal(0); err != nil {
					t.Fatalf("the stranger holding the pid file's PID %d: %v", stranger.ID.PID, err)
				}
				if !strings.Contains(out.String(), tc.report) || !strings.Contains(out.String(), "signalled nothing") {
					t.Errorf("output does not report the stale pid file (%q):\n%s", tc.report, out.String())
				}
				if !strings.Contains(out.String(), step.out) {
					t.Errorf("output lacks %q:\n%s", step.out, out.String())
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the stale pid file was not removed: %v", err)
				}
			})
		}
	}
}

// down stops the process the pid file identifies (SIGTERM) and then kills what is left of its
// process group, after the leader is gone.
func TestDown_StopsTheEnvironmentAndWhatIsLeftOfItsGroup(t *testing.T) {
	// The leader ends on SIGTERM and leaves a member behind in its session and group.
	serve := exec.Command("sh", "-c", `sleep 600 & echo $!; wait`)
	serve.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := procid.Of(serve.Process.Pid) // not waited yet: the PID is still serve's
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	memberPID, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	member := openProcess(t, memberPID)
	t.Cleanup(func() { _ = member.Signal(syscall.SIGKILL) })
	waited := make(chan error, 1)
	go func() { waited <- serve.Wait() }()

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(id.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := down(devenv.Options{Dir: dir, Out: &out}); err != nil {
		t.Fatalf("down: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "Stopped; no process left behind") {
		t.Errorf("output:\n%s", out.String())
	}
	var exit *exec.ExitError
	if err := <-waited; !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("serve ended with %v, want SIGTERM", err)
	}
	if !member.Wait(0) {
		t.Error("the member left in serve's group still runs")
	}
	if _, err := os.Stat(filepath.Join(dir, pidFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pid file was not removed: %v", err)
	}
}

// startStranger starts a process unrelated to devenv, in its own process group, and returns a
// handle on it; it is killed when the test ends.
func startStranger(t *testing.T) *procid.Process {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return openProcess(t, cmd.Process.Pid)
}

func openProcess(t *testing.T, pid int) *procid.Process {
	t.Helper()
	id, err := procid.Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	p, err := procid.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
