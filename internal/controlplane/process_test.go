package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func logFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestProcess_RestartsAfterACrashUntilTheBudgetIsSpent(t *testing.T) {
	out := logFile(t)
	p := &process{name: "crasher", path: "/bin/sh", args: []string{"-c", "echo run; exit 3"}, restarts: 2}
	if err := p.start(out); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the process did not end for good")
	}
	exited, err := p.exited()
	if !exited || err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("exited = %v, %v; want the last run's exit status 3", exited, err)
	}
	data, _ := os.ReadFile(out.Name())
	if runs := strings.Count(string(data), "run\n"); runs != 3 {
		t.Errorf("ran %d times, want 3 (one start and two restarts):\n%s", runs, data)
	}
	if again := strings.Count(string(data), "starting it again"); again != 2 {
		t.Errorf("logged %d restarts, want 2:\n%s", again, data)
	}
	if !strings.Contains(string(data), "crasher exited (exit status 3); no restart left") {
		t.Errorf("the log does not say the process ended for good:\n%s", data)
	}
}

// A component that exits on its own once (as kube-controller-manager does when the API server
// goes away while it builds its controllers) runs again, and a stop then ends it for good.
func TestProcess_RestartsAComponentThatExitedOnItsOwn(t *testing.T) {
	out := logFile(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := `if [ -e "$0" ]; then echo again; exec sleep 60; fi; touch "$0"; echo first; exit 1`
	p := &process{name: "component", path: "/bin/sh", args: []string{"-c", script, marker}, restarts: componentRestarts}
	if err := p.start(out); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for data, _ := os.ReadFile(out.Name()); !strings.Contains(string(data), "again\n"); data, _ = os.ReadFile(out.Name()) {
		if exited, err := p.exited(); exited {
			t.Fatalf("the component ended for good (%v):\n%s", err, data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the component was not started again:\n%s", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if exited, _ := p.exited(); !exited {
		t.Fatal("the component is still running after stop")
	}
	data, _ := os.ReadFile(out.Name())
	if again := strings.Count(string(data), "starting it again"); again != 1 {
		t.Errorf("logged %d restarts, want 1:\n%s", again, data)
	}
}

func TestProcess_StopIsNotACrash(t *testing.T) {
	out := logFile(t)
	p := &process{name: "sleeper", path: "/bin/sh", args: []string{"-c", "echo run; exec sleep 60"}, restarts: 3}
	if err := p.start(out); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if exited, _ := p.exited(); !exited {
		t.Fatal("the process is still running after stop")
	}
	data, _ := os.ReadFile(out.Name())
	if strings.Contains(string(data), "starting it again") {
		t.Errorf("a stopped process was started again:\n%s", data)
	}
}
