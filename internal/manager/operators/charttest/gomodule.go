package charttest

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// GoModuleDir downloads a Go module at version (a tag, such as v1.2.3) into the Go module cache
// with `go mod download` and returns its directory there. A public operator whose repository is
// a Go module carries its published chart's source at each release tag, so tests can use real
// charts without keeping them in this repository. It runs outside any module (the repository's
// go.mod and go.sum stay as they are) and fails the test when the module proxy cannot serve it.
func GoModuleDir(t testing.TB, module, version string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Error != "" || mod.Dir == "" {
		t.Fatalf("go mod download %s@%s: %v %s (%s): the test needs the Go module proxy, or the module in the module cache",
			module, version, err, mod.Error, out)
	}
	return mod.Dir
}
