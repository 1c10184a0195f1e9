package procid

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"
)

// Child watches a process this process started in its own process group (Setpgid or Setsid) and
// signals that group race-free: the group's ID is the leader's PID, which the kernel may hand to
// another process once the leader is reaped, so the group is signalled only while the leader is
// not yet reaped. Child reaps the leader itself; nothing else may call cmd.Wait.
type Child struct {
	pid    int
	mu     sync.Mutex
	reaped bool // set, under mu, right before the leader is reaped
	done   chan struct{}
	err    error
}

// Watch starts watching cmd, which has just been started; it calls cmd.Wait once cmd exits.
func Watch(cmd *exec.Cmd) *Child {
	c := &Child{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		// Learn of the end without reaping; mark it before the reap frees the PID.
		WaitExited(c.pid)
		c.mu.Lock()
		c.reaped = true
		c.mu.Unlock()
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c
}

// Done is closed once the leader has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is what cmd.Wait returned; read it after Done is closed.
func (c *Child) Err() error { return c.err }

// SignalGroup sends sig to the leader's process group; ErrGone, and no signal, once the leader
// has exited (whatever is left of its group can no longer be named safely by number).
func (c *Child) SignalGroup(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reaped {
		return ErrGone
	}
	// The leader is not reaped, so its PID, the group's ID, is still its own.
	if err := syscall.Kill(-c.pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return ErrGone
		}
		return err
	}
	return nil
}

// WaitExited blocks until the child pid has exited, leaving it unreaped (waitid with WNOWAIT):
// until it is reaped, its PID and group ID still name it.
func WaitExited(pid int) {
	const pPID, wNoWait = 1, 0x1000000
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])),
			syscall.WEXITED|wNoWait, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}
