package controlplane

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// guard stops etcd and kube-apiserver when this process dies without stopping them: a panic, a
// test timeout (which panics) or a SIGKILL skip every cleanup, and envtest starts the two without
// a parent-death signal (the other components have one, see process.spawn). A shell waits for
// end-of-file on a pipe that only this process holds open, then sends SIGTERM and, 10 s later,
// SIGKILL. A clean Stop kills the guard first, so it never signals anything itself.
type guard struct {
	cmd  *exec.Cmd
	pipe *os.File // the write end; closed by the kernel when this process ends
	pids []int    // what it guards
}

const guardScript = `cat >/dev/null; kill -TERM "$@" 2>/dev/null; sleep 10; kill -KILL "$@" 2>/dev/null`

// startGuard guards pids; nil when there is nothing to guard or no shell to do it.
func startGuard(pids []int) *guard {
	if len(pids) == 0 {
		return nil
	}
	args := []string{"-c", guardScript, "slipway-controlplane-guard"}
	for _, pid := range pids {
		args = append(args, strconv.Itoa(pid))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer func() { _ = r.Close() }()
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdin = r
	// Its own process group: a Ctrl-C sent to the test's group must not end the guard before
	// the test has cleaned up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil
	}
	return &guard{cmd: cmd, pipe: w, pids: pids}
}

// stop ends the guard without letting it signal anything.
func (g *guard) stop() {
	if g == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
	_ = g.pipe.Close()
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
// /proc; nil elsewhere).
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
