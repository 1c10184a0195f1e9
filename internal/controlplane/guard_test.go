package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGuard_StopsTheControlPlaneOfACrashedProcess: a process that starts a control plane and dies
// without stopping it (as a panic or a test timeout would) leaves no etcd or kube-apiserver
// behind; a clean Stop ends the guard too.
func TestGuard_StopsTheControlPlaneOfACrashedProcess(t *testing.T) {
	if os.Getenv("SLIPWAY_GUARD_HELPER") == "1" {
		crashWithAControlPlane()
		return
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with make test")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuard_StopsTheControlPlaneOfACrashedProcess$")
	cmd.Env = append(os.Environ(), "SLIPWAY_GUARD_HELPER=1", "SLIPWAY_GUARD_LOGS="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "pids "); ok {
			for _, f := range strings.Fields(rest) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
		}
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the helper ended with %v, want exit status 3", err)
	}
	if len(pids) != 2 {
		t.Fatalf("the helper reported pids %v, want etcd and kube-apiserver", pids)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still running 30 s after its parent died", pid)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// A clean Stop ends the guard without it signalling anything.
	cp, err := Start(context.Background(), Options{Mode: Light, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	g := cp.guard
	if g == nil {
		t.Fatal("no guard for etcd and kube-apiserver")
	}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if g.cmd.ProcessState == nil {
		t.Error("the guard is still running after Stop")
	}
}

// crashWithAControlPlane starts a light control plane, reports the PIDs of its etcd and
// kube-apiserver, and exits without stopping anything.
func crashWithAControlPlane() {
	if _, err := Start(context.Background(), Options{Mode: Light, LogDir: filepath.Join(os.Getenv("SLIPWAY_GUARD_LOGS"), "helper")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("pids", strings.Trim(fmt.Sprint(children("etcd", "kube-apiserver")), "[]"))
	os.Exit(3)
}

// alive reports whether pid runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[end+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
