package procid

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Identity tells one process apart from every other process of this machine, past or future.
type Identity struct {
	// PID is the process's ID, which the kernel reuses once the process is reaped.
	PID int
	// Start is when the process started, in clock ticks after boot (field 22 of /proc/PID/stat).
	Start uint64
	// Boot is the boot the process belongs to (/proc/sys/kernel/random/boot_id).
	Boot string
}

// ErrGone is returned for a process that no longer exists: it has exited, or its PID now belongs
// to another process.
var ErrGone = errors.New("the process has ended")

// Self is this process's identity.
func Self() (Identity, error) { return Of(os.Getpid()) }

// Of is the identity of the process that holds pid now.
func Of(pid int) (Identity, error) {
	start, err := StartTime(pid)
	if err != nil {
		return Identity{}, err
	}
	boot, err := bootID()
	if err != nil {
		return Identity{}, err
	}
	return Identity{PID: pid, Start: start, Boot: boot}, nil
}

// String is the form Parse reads: "PID START BOOT".
func (id Identity) String() string { return fmt.Sprintf("%d %d %s", id.PID, id.Start, id.Boot) }

// Parse reads what String wrote. A bare PID (a pid file written without the identity) is an error.
func Parse(s string) (Identity, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return Identity{}, fmt.Errorf("%q is not \"PID START-TIME BOOT-ID\"", strings.TrimSpace(s))
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return Identity{}, fmt.Errorf("%q: bad PID %q", strings.TrimSpace(s), f[0])
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return Identity{}, fmt.Errorf("%q: bad start time %q", strings.TrimSpace(s), f[1])
	}
	return Identity{PID: pid, Start: start, Boot: f[2]}, nil
}

// Alive reports whether the process id names still exists (a zombie not yet reaped counts).
func (id Identity) Alive() bool {
	cur, err := Of(id.PID)
	return err == nil && cur == id
}

// StartTime is the start time of the process holding pid, in clock ticks after boot (field 22 of
// /proc/PID/stat); ErrGone when no process holds pid.
func StartTime(pid int) (uint64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, errNoSuchProcess) {
		return 0, fmt.Errorf("process %d: %w", pid, ErrGone)
	}
	if err != nil {
		return 0, err
	}
	return parseStartTime(stat)
}

// parseStartTime reads field 22 of a /proc/PID/stat line. Field 2, the command name in
// parentheses, may hold spaces and parentheses: the fields after it start after the last ')'.
func parseStartTime(stat []byte) (uint64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	fields := bytes.Fields(stat[end+1:]) // field 3 (state) onwards
	const startField = 22 - 3
	if len(fields) <= startField {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	return strconv.ParseUint(string(fields[startField]), 10, 64)
}

func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
