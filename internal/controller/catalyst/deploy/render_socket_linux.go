package deploy

import "golang.org/x/sys/unix"

// socketpair is a connected pair of Unix stream sockets, closed on exec (exec.Cmd's ExtraFiles
// passes its end to the renderer).
func socketpair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
}
