package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// etcdDirPrefix names the data directories of the etcds this package starts:
// slipway-etcd-<pid of the process that started it>-<random>.
const etcdDirPrefix = "slipway-etcd-"

// etcdDataDir creates the data directory of an etcd this process starts, after removing those
// that processes no longer running left behind. A test process that dies (a timeout, SIGKILL, a
// crash) cannot remove its etcd's data, some 125 MB each; the next start on the machine takes it
// away. Stop removes the directory of a run that ends.
func etcdDataDir() (string, error) {
	sweepEtcdDataDirs(os.TempDir())
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", etcdDirPrefix, os.Getpid()))
}

// sweepEtcdDataDirs removes the etcd data directories in dir whose process no longer runs.
func sweepEtcdDataDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if pid, ok := etcdDirOwner(e.Name()); ok && e.IsDir() && processStart(pid) == "" {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// etcdDirOwner is the pid in an etcd data directory's name.
func etcdDirOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, etcdDirPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// removeDirs removes each directory named and forgets its name, so that a second Stop removes
// nothing.
func removeDirs(dirs ...*string) error {
	var errs []error
	for _, dir := range dirs {
		if *dir != "" {
			errs = append(errs, os.RemoveAll(*dir))
			*dir = ""
		}
	}
	return errors.Join(errs...)
}
