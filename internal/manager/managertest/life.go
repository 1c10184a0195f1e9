package managertest

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// life is what a manager's parts (its process, chart repository, directory, database) hand their
// cleanups to: the test's (Start), or, for the shared manager, a list StopShared runs when the
// test binary ends. Fatal and Helper go to the test that starts the manager. Once a shared manager
// is running, the test that started it may end: Errorf and Logf then print to standard error
// instead (charttest's and pgtest's cleanups report through them).
type life struct {
	testing.TB
	shared bool

	mu       sync.Mutex
	cleanups []func()
	detached bool
	failed   bool
}

// Cleanup registers f with the test, or with the shared list (run last registered first).
func (l *life) Cleanup(f func()) {
	if !l.shared {
		l.TB.Cleanup(f)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleanups = append(l.cleanups, f)
}

// TempDir is the test's temporary directory, or for the shared manager one removed by StopShared.
func (l *life) TempDir() string {
	if !l.shared {
		return l.TB.TempDir()
	}
	dir, err := os.MkdirTemp("", "slipway-managertest-")
	if err != nil {
		l.Fatal(err)
	}
	l.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (l *life) Errorf(format string, args ...any) {
	if !l.isDetached() {
		l.TB.Errorf(format, args...)
		return
	}
	l.mu.Lock()
	l.failed = true
	l.mu.Unlock()
	fmt.Fprintf(os.Stderr, "managertest: "+format+"\n", args...)
}

func (l *life) Logf(format string, args ...any) {
	if !l.isDetached() {
		l.TB.Logf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, "managertest: "+format+"\n", args...)
}

func (l *life) isDetached() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.detached
}

// detach stops using the starting test for reports.
func (l *life) detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.detached = true
}

// runCleanups runs the shared list, last registered first, and tells whether one reported an error.
func (l *life) runCleanups() bool {
	l.mu.Lock()
	fs := l.cleanups
	l.cleanups = nil
	l.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}
