package deploy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ObserveRenderers makes f see the environment and the request of every renderer started until
// the returned function is called.
func ObserveRenderers(f func(env []string, request []byte)) (stop func()) {
	renderStarting = f
	return func() { renderStarting = nil }
}

// SandboxProbe confines the process as a renderer confines itself, then tries what a renderer
// must not do and writes one line per attempt: what, then "ok" or the error. addr is a TCP
// address to connect to. With confine false it tries the same unconfined, to show the attempts
// work where nothing stops them.
func SandboxProbe(w io.Writer, addr string, confine bool) int {
	if confine {
		if err := sandbox(); err != nil {
			fmt.Fprintln(w, "sandbox:", err)
			return 1
		}
	}
	outcome := func(what string, err error) {
		if err == nil {
			fmt.Fprintln(w, what+": ok")
			return
		}
		fmt.Fprintln(w, what+": "+err.Error())
	}
	for _, fam := range []struct {
		name string
		af   int
	}{{"AF_INET", unix.AF_INET}, {"AF_INET6", unix.AF_INET6}, {"AF_UNIX", unix.AF_UNIX}, {"AF_NETLINK", unix.AF_NETLINK}} {
		fd, err := unix.Socket(fam.af, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if fam.af == unix.AF_NETLINK {
			fd, err = unix.Socket(fam.af, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		}
		if err == nil {
			_ = unix.Close(fd)
		}
		outcome("socket "+fam.name, err)
	}
	_, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	outcome("socketpair", err)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		_ = c.Close()
	}
	outcome("dial", err)
	resp, err := http.Get("http://" + addr + "/fetched")
	if err == nil {
		_ = resp.Body.Close()
	}
	outcome("http get", err)
	outcome("exec", exec.Command("/bin/sh", "-c", "true").Run())
	var params [30]uint32 // struct io_uring_params, which the kernel reads and writes
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
	if errno == 0 {
		_ = unix.Close(int(fd))
		outcome("io_uring_setup", nil)
	} else {
		outcome("io_uring_setup", errno)
	}
	return 0
}
