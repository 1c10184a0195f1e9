package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// Every process of a control plane ends with the process that started it, even one that panics,
// hits `go test -timeout` or is SIGKILLed, and nothing ever signals a PID it remembered: once a
// process has exited its PID may belong to anything. The kernel does it: each child carries a
// parent-death signal (SIGKILL), which reaches that very process when its parent goes, and no other.
//
//   - kube-controller-manager, kube-scheduler and kwok are started by process.spawn with
//     SysProcAttr.Pdeathsig.
//   - etcd and kube-apiserver are started by envtest, which sets its own SysProcAttr. They are
//     started through a wrapper script (dieWithParent) that sets the signal with setpriv(1) before
//     it execs the real binary, in the same process.
//
// The parent-death signal belongs to the thread that forked the child, not to the process
// (https://go.dev/issue/27505): a goroutine locked to its thread that exits takes the thread, and so
// the children forked from it, along. So every fork happens on spawnThread, which never ends.

// spawnThread runs fn on one OS thread locked to a goroutine that never returns, so the
// parent-death signal of a child fn forks fires when this process dies and not before. Calls run
// one at a time; fn must not call spawnThread itself.
func spawnThread(fn func()) {
	spawnOnce.Do(func() {
		spawnReqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range spawnReqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawnReqs <- func() {
		defer close(done)
		fn()
	}
	<-done
}

var (
	spawnOnce sync.Once
	spawnReqs chan func()
)

// StartDyingWithParent starts cmd with a parent-death signal (SIGKILL), keeping the rest of its
// SysProcAttr, from the thread that lives as long as this process: the child ends when this
// process does, however it ends, and not before. For the processes a harness starts beside the
// control plane (the operator, for one).
func StartDyingWithParent(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	var err error
	spawnThread(func() { err = cmd.Start() })
	return err
}

// wrapperScript execs setpriv, which sets the parent-death signal and execs a shell that checks
// that the parent is still the process that started it (it may have died before the signal was
// set), which execs the binary ($0) with the arguments.
const wrapperScript = `#!/bin/sh
# Written by slipway's controlplane package: %[1]s with a parent-death signal (SIGKILL), so it
# ends with process %[2]d, which started it.
exec %[3]s --pdeathsig KILL -- /bin/sh -c '[ "$PPID" = %[2]d ] || exit 125; exec "$0" "$@"' %[1]s "$@"
`

// dieWithParent writes into dir an executable named like binary that runs binary, in its own
// process, with a parent-death signal; it returns its path. Start binary through it only from this
// process, on spawnThread.
func dieWithParent(dir, binary string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return "", fmt.Errorf("setpriv, which gives etcd and kube-apiserver a parent-death signal, is missing "+
			"(Debian package util-linux; make deps installs it): %w", err)
	}
	path := filepath.Join(dir, filepath.Base(binary))
	script := fmt.Sprintf(wrapperScript, shellQuote(binary), os.Getpid(), shellQuote(setpriv))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", err
	}
	return path, nil
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + string(bytes.ReplaceAll([]byte(s), []byte("'"), []byte(`'\''`))) + "'"
}

// newChildren lists the children named name that are not in before.
func newChildren(before []int, name string) []int {
	var out []int
	for _, pid := range children(name) {
		if !slices.Contains(before, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// children lists the PIDs of this process's children whose command name is one of names (Linux
// /proc; nil elsewhere). They are read (resident memory), never signalled.
func children(names ...string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses, so split at the last ')'.
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		fields := bytes.Fields(stat[end+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(string(fields[1]))
		if err != nil || ppid != self || !slices.Contains(names, string(stat[open+1:end])) {
			continue
		}
		out = append(out, pid)
	}
	return out
}
