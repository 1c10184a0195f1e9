package operator

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestMemoryLimit_ReadsCgroupV2(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		want          int64
	}{
		{"bytes", "536870912\n", 536870912},
		{"unlimited", "max\n", 0},
		{"junk", "lots", 0},
		{"negative", "-1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := memoryLimit(p); got != tc.want {
				t.Errorf("memoryLimit(%q) = %d, want %d", tc.content, got, tc.want)
			}
		})
	}
	if got := memoryLimit(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing file: %d, want 0", got)
	}
}

func TestGCPercent_DefaultUnlessGOGCIsSet(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	if !SetGCPercent(DefaultGCPercent) {
		t.Fatal("GOGC unset: the default was not set")
	}
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("GOGC unset: the collector's target is %d, want %d", got, DefaultGCPercent)
	}

	t.Setenv("GOGC", "200")
	if SetGCPercent(DefaultGCPercent) {
		t.Error("GOGC=200: SetGCPercent overrode the environment")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=200: the collector's target changed to %d", got)
	}
}
