package pgtest

import (
	"strings"
	"testing"
)

// Without PostgreSQL the error names the Debian package and `make deps` (the tests then fail, never skip).
func TestBinDirMissingNamesPackage(t *testing.T) {
	old := debianBinGlob
	debianBinGlob = t.TempDir() + "/*/bin"
	t.Cleanup(func() { debianBinGlob = old })
	t.Setenv(BinDirEnv, "")
	_, err := BinDir()
	if err == nil || !strings.Contains(err.Error(), "Debian package `postgresql`") || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("BinDir without PostgreSQL: %v, want an error naming the package and make deps", err)
	}
}
