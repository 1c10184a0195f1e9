package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The roles a re-run of this test binary plays in TestCrash_EndsTheControlPlaneAndSignalsNoStranger.
const (
	roleEnv    = "SLIPWAY_CRASH_ROLE"
	tokenEnv   = "SLIPWAY_CRASH_TOKEN"
	logsEnv    = "SLIPWAY_CRASH_LOGS"
	roleReaper = "reaper"
	roleCrash  = "crasher"
)

// TestCrash_EndsTheControlPlaneAndSignalsNoStranger: a process that starts a control plane and dies
// without stopping it (as a panic, a test timeout or a SIGKILL would) leaves no etcd or
// kube-apiserver behind, and nothing signals their PIDs afterwards. It is arranged so that the
// kernel hands etcd's PID, once etcd is gone, to an unrelated process (a "stranger"): the stranger
// must survive everything the crashed process left behind.
//
// A helper (the reaper) is a child subreaper, so the crashed process's orphans become its children:
// it sees etcd end, reaps it, and starts the stranger with etcd's PID (through
// /proc/sys/kernel/ns_last_pid, or by using up PIDs until the counter gets there). Then it waits until
// no process of the crashed one runs any more, and checks that the stranger is alive.
func TestCrash_EndsTheControlPlaneAndSignalsNoStranger(t *testing.T) {
	switch os.Getenv(roleEnv) {
	case roleCrash:
		crashWithAControlPlane()
		return
	case roleReaper:
		reapAndPlantAStranger(t)
		return
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with make test")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash_EndsTheControlPlaneAndSignalsNoStranger$", "-test.v")
	// The crasher's control plane leaves its directories behind by design: in a TMPDIR of the test's.
	cmd.Env = append(os.Environ(), roleEnv+"="+roleReaper, logsEnv+"="+t.TempDir(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the reaper failed (%v):\n%s", err, out)
	}
	t.Logf("the reaper:\n%s", out)
}

// reapAndPlantAStranger is the reaper's part.
func reapAndPlantAStranger(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("becoming a child subreaper: %v", errno)
	}
	token := randomToken(t)
	crasher := exec.Command(os.Args[0], "-test.run=^TestCrash_EndsTheControlPlaneAndSignalsNoStranger$")
	crasher.Env = append(os.Environ(), roleEnv+"="+roleCrash, tokenEnv+"="+token)
	crasher.Stderr = os.Stderr
	stdout, err := crasher.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := crasher.Start(); err != nil {
		t.Fatal(err)
	}
	var etcd, apiserver int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "pids %d %d", &etcd, &apiserver); err == nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := crasher.Wait(); crasher.ProcessState == nil || crasher.ProcessState.ExitCode() != 3 {
		t.Fatalf("the crasher ended with %v, want exit status 3", err)
	}
	if etcd == 0 || apiserver == 0 {
		t.Fatal("the crasher reported no etcd and kube-apiserver PIDs")
	}
	t.Logf("the crasher is gone; its etcd was %d, its kube-apiserver %d", etcd, apiserver)

	// etcd and kube-apiserver are this process's children now (they were the crasher's orphans):
	// wait for their end and reap them, which frees their PIDs.
	for _, p := range []struct {
		name string
		pid  int
	}{{"etcd", etcd}, {"kube-apiserver", apiserver}} {
		status, err := reap(p.pid, time.Minute)
		switch {
		case errors.Is(err, errReapedElsewhere):
			t.Logf("%s %d: %v", p.name, p.pid, err)
			continue
		case err != nil:
			t.Fatalf("%s: %v", p.name, err)
		}
		t.Logf("%s %d ended: %s", p.name, p.pid, describe(status))
	}

	stranger, err := startWithPID(etcd)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = stranger.Wait(); close(ended) }()
	defer func() { _ = stranger.Process.Kill(); <-ended }()
	t.Logf("a stranger (sleep) runs with etcd's PID %d", stranger.Process.Pid)

	// Whatever the crash left running that could still act (a guard, a timer) carries the token.
	deadline := time.Now().Add(time.Minute)
	for left := carriers(token); len(left) > 0; left = carriers(token) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the crashed test still run a minute after it: %s", strings.Join(left, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-ended:
		t.Fatalf("the stranger that took etcd's PID %d was ended: %v", etcd, stranger.ProcessState)
	default:
	}
}

// crashWithAControlPlane starts a light control plane, reports the PIDs of its etcd and
// kube-apiserver, and exits without stopping anything.
func crashWithAControlPlane() {
	if _, err := Start(context.Background(), Options{Mode: Light, LogDir: filepath.Join(os.Getenv(logsEnv), "crasher")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	etcd, apiserver := children("etcd"), children("kube-apiserver")
	if len(etcd) != 1 || len(apiserver) != 1 {
		fmt.Fprintf(os.Stderr, "children etcd %v, kube-apiserver %v: want one each\n", etcd, apiserver)
		os.Exit(1)
	}
	fmt.Println("pids", etcd[0], apiserver[0])
	os.Exit(3)
}

// errReapedElsewhere: the process had ended and was reaped by its parent before that died.
var errReapedElsewhere = errors.New("ended and reaped by its parent before it died")

// reap waits up to timeout for the child pid to end and reaps it.
func reap(pid int, timeout time.Duration) (syscall.WaitStatus, error) {
	deadline := time.Now().Add(timeout)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECHILD) && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH):
			// It ended before its parent and was reaped there: it is gone and its PID free.
			return 0, errReapedElsewhere
		case err != nil:
			return 0, fmt.Errorf("waiting for %d: %w", pid, err)
		case got == pid:
			return ws, nil
		case time.Now().After(deadline):
			return 0, fmt.Errorf("process %d still runs %s after its parent died", pid, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}

// startWithPID starts `sleep` with PID pid: it sets the kernel's last PID to the one before (as
// root), or else starts short-lived processes until the counter gets there (as a user: a lap of the
// PID space takes some 30 s). It gives up after 3 minutes, for instance when another process holds
// pid all along.
func startWithPID(pid int) (*exec.Cmd, error) {
	const lastPID = "/proc/sys/kernel/ns_last_pid"
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
			time.Sleep(10 * time.Millisecond) // another process holds it for now
			continue
		}
		last, err := os.ReadFile(lastPID)
		if err != nil {
			return nil, err
		}
		if n, _ := strconv.Atoi(strings.TrimSpace(string(last))); n != pid-1 {
			if os.WriteFile(lastPID, []byte(strconv.Itoa(pid-1)), 0o644) != nil {
				if err := exec.Command("/bin/true").Run(); err != nil {
					return nil, err
				}
			}
			continue
		}
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if cmd.Process.Pid == pid {
			return cmd, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	return nil, fmt.Errorf("could not start a process with PID %d within 3 minutes", pid)
}

// carriers lists the running processes (not zombies) whose environment holds token.
func carriers(token string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(tokenEnv+"="+token)) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		out = append(out, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(comm))))
	}
	return out
}

func randomToken(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
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
