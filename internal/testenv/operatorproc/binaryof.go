package operatorproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// BinaryOf is Binary for another main package of the module (pkg relative to the module root, such
// as "./cmd/manager"): built once per test binary with ShippedBuildFlags and CGO_ENABLED=0, into
// the same per-process directory, and named after the package's last element. With envOverride
// set to a path (when envOverride is not empty) it returns that binary instead.
func BinaryOf(tb testing.TB, pkg, envOverride string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := binaries[pkg]; ok {
		return bin
	}
	if envOverride != "" {
		if bin := os.Getenv(envOverride); bin != "" {
			binaries[pkg] = bin
			return bin
		}
	}
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	base := filepath.Join(os.TempDir(), "slipway-operatorproc")
	removeStale(base)
	dir := filepath.Join(base, strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", append(append([]string{"build"}, ShippedBuildFlags...), "-o", bin, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	binaries[pkg] = bin
	return bin
}
