package procid

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// The pidfd system calls have one number on every Linux architecture. They are called through
// syscall rather than golang.org/x/sys/unix, which the module only requires indirectly.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
	// pidfdSignalProcessGroup sends to the process group the pidfd's process leads (Linux 6.9).
	pidfdSignalProcessGroup = 0x4
)

var errNoSuchProcess = syscall.ESRCH

// Process is a handle on one process, through a pidfd: what is sent through it reaches that very
// process, or the process group it leads, even after its PID has passed to another process.
type Process struct {
	ID Identity
	fd int
}

// Open returns a handle on the process id names, or ErrGone when there is none: it has exited,
// or its PID belongs to another process (a pid file left behind by a crash names a stranger).
func Open(id Identity) (*Process, error) {
	boot, err := bootID()
	if err != nil {
		return nil, err
	}
	if boot != id.Boot {
		return nil, fmt.Errorf("process %d belongs to an earlier boot: %w", id.PID, ErrGone)
	}
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(id.PID), 0, 0)
	if errno == syscall.ESRCH {
		return nil, fmt.Errorf("process %d: %w", id.PID, ErrGone)
	}
	if errno != 0 {
		return nil, fmt.Errorf("pidfd_open %d: %w", id.PID, errno)
	}
	p := &Process{ID: id, fd: int(fd)}
	// The pidfd names the process that held the PID when it was opened. If the PID holds id's
	// start time now, that was id's process: a later holder would have started later.
	start, err := StartTime(id.PID)
	if err != nil || start != id.Start {
		p.Close()
		if err != nil && !errors.Is(err, ErrGone) {
			return nil, err
		}
		return nil, fmt.Errorf("process %d is not the one started at tick %d: %w", id.PID, id.Start, ErrGone)
	}
	return p, nil
}

// Close releases the pidfd.
func (p *Process) Close() { _ = syscall.Close(p.fd) }

// Signal sends sig to the process; ErrGone once it has been reaped.
func (p *Process) Signal(sig syscall.Signal) error { return p.send(sig, 0) }

// SignalGroup sends sig to every process of the group the process leads (its ID is the
// process's PID), even when the leader itself has gone; ErrGone when the group is empty. It
// never reaches a group that a later holder of the PID leads. Before Linux 6.9, which cannot send
// to a group through a pidfd, it signals nothing: ErrGone when no process is in a group with that
// ID, an error naming them otherwise.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	err := p.send(sig, pidfdSignalProcessGroup)
	if !errors.Is(err, syscall.EINVAL) {
		return err
	}
	left := groupMembers(p.ID.PID)
	if len(left) == 0 {
		return fmt.Errorf("process group %d: %w", p.ID.PID, ErrGone)
	}
	return fmt.Errorf("processes %v of group %d are left; signalling a group safely needs Linux 6.9 or newer: %w",
		left, p.ID.PID, err)
}

// groupMembers lists the processes whose process group ID is pgid, zombies left out. For a
// report only: by the time it is read, a number may have passed to another process.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		end := bytes.LastIndexByte(stat, ')')
		if end < 0 {
			continue
		}
		f := bytes.Fields(stat[end+1:]) // state ppid pgrp ...
		if len(f) > 2 && string(f[0]) != "Z" && string(f[2]) == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// GroupAlive reports whether the group the process leads still has a process.
func (p *Process) GroupAlive() bool { return !errors.Is(p.SignalGroup(0), ErrGone) }

func (p *Process) send(sig syscall.Signal, flags uintptr) error {
	_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(p.fd), uintptr(sig), 0, flags, 0, 0)
	switch errno {
	case 0:
		return nil
	case syscall.ESRCH:
		return fmt.Errorf("process %d: %w", p.ID.PID, ErrGone)
	default:
		return fmt.Errorf("pidfd_send_signal to %d: %w", p.ID.PID, errno)
	}
}

// Wait waits up to timeout for the process to exit (a zombie has exited) and reports whether it
// has.
func (p *Process) Wait(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		ts := syscall.NsecToTimespec(left.Nanoseconds())
		fds := [1]struct {
			fd             int32
			events, revent int16
		}{{fd: int32(p.fd), events: 0x1}} // POLLIN: the process has exited
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return false
		case n > 0:
			return true
		case left == 0:
			return false
		}
	}
}
