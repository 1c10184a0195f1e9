package deploy

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The renderer runs what a pull request wrote (templates, a kustomization) and needs no network
// and no other program: its only way out is the socket it inherits for `lookup`. Before it reads
// its request it confines itself for good with a seccomp filter on every thread (TSYNC), under
// no_new_privs: socket(2) and socketpair(2) of every family, connect(2), io_uring_setup(2) (whose
// operations include socket and connect, out of seccomp's sight) and execve(2)/execveat(2) fail
// with EPERM. So kustomize can neither fetch a URL (net/http) nor clone a repository (the git
// binary), and no template function can resolve a name. This needs no privilege: it works in a
// pod with the RuntimeDefault seccomp profile and no capability, where a network namespace of its
// own (CAP_SYS_ADMIN, or user namespaces, which RuntimeDefault refuses) cannot be had.
//
// The filter checks the architecture first: a system call made through another ABI (the 32-bit
// one of an amd64 kernel, say) numbers its calls differently, so it kills the process; on amd64
// the x32 numbers (bit 30 set) fail too. It is written with golang.org/x/net/bpf rather than a
// seccomp library: the one there is (elastic/go-seccomp-bpf) lets a call of another architecture
// through when the default action is to allow.

// deniedSyscalls fail with EPERM in the renderer.
var deniedSyscalls = []uint32{unix.SYS_SOCKET, unix.SYS_SOCKETPAIR, unix.SYS_CONNECT, unix.SYS_IO_URING_SETUP,
	unix.SYS_EXECVE, unix.SYS_EXECVEAT}

// auditArch is the seccomp architecture of the running program.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}

// x32SyscallBit marks the system calls of amd64's x32 ABI.
const x32SyscallBit = 0x40000000

// sandboxFilter is the seccomp program of the renderer.
func sandboxFilter() ([]bpf.RawInstruction, error) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	// Each test jumps to the last instruction (EPERM) when it holds; after them, allow.
	tests := len(deniedSyscalls)
	if runtime.GOARCH == "amd64" {
		tests++
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipTrue: uint8(tests)})
	}
	for i, nr := range deniedSyscalls {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(deniedSyscalls) - i)})
	}
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)})
	return bpf.Assemble(prog)
}

// sandbox confines the process (every thread of it) as described above; it cannot be undone.
func sandbox() error {
	raw, err := sandboxFilter()
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// no_new_privs is a thread's: set it on the thread that installs the filter, which TSYNC
	// then gives every other thread together with the filter.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	switch {
	case errno != 0:
		return fmt.Errorf("installing the seccomp filter: %w", errno)
	case r != 0:
		return fmt.Errorf("installing the seccomp filter: thread %d could not take it", r)
	}
	// A URL kustomize would fetch gets this answer rather than the system's EPERM.
	http.DefaultTransport = refuseNetwork{}
	return nil
}

// refuseNetwork is the renderer's HTTP transport: every request fails, naming its URL.
type refuseNetwork struct{}

func (refuseNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("fetching %s: %w", r.URL.Redacted(), errNoNetwork)
}

var errNoNetwork = errors.New("a render makes no network request; vendor what it needs into the repository")
