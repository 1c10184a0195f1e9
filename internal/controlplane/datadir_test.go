package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSweepEtcdDataDirs: the data directories of etcds started by a process that no longer runs
// are removed; this process's, a running process's and anything else are kept.
func TestSweepEtcdDataDirs(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := map[string]bool{ // name: kept
		fmt.Sprintf("%s%d-1", etcdDirPrefix, dead.Process.Pid): false,
		fmt.Sprintf("%s%d-2", etcdDirPrefix, os.Getpid()):      true,
		fmt.Sprintf("%s%d-3", etcdDirPrefix, 1):                true,
		etcdDirPrefix + "x-4":                                  true,
		"k8s_test_framework_5":                                 true,
	}
	for name := range names {
		if err := os.MkdirAll(filepath.Join(dir, name, "member", "wal"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepEtcdDataDirs(dir)
	for name, kept := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		if got := err == nil; got != kept {
			t.Errorf("%s: kept %v, want %v (%v)", name, got, kept, err)
		}
	}
}
