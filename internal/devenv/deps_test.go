package devenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// depsScript runs hack/deps.sh with args against a package list of its own (SLIPWAY_DEPS_PACKAGES)
// and an apt-get (and a sudo, for a run as a user) that log their calls and install a package by
// creating the file its probe names. It returns the output, the calls and the exit code.
func depsScript(t *testing.T, packages string, args ...string) (out, calls string, code int) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	// apt-get install -y -qq PKG...: PKG's probe is <fake root>/PKG.
	aptGet := `#!/bin/sh
echo "apt-get $*" >>"$DEPS_CALLS"
[ "$1" = install ] || exit 0
shift
for p in "$@"; do case $p in -*) ;; *) touch "$DEPS_ROOT/$p" ;; esac; done
`
	sudo := "#!/bin/sh\necho \"sudo $*\" >>\"$DEPS_CALLS\"\nexec \"$@\"\n"
	for name, body := range map[string]string{"apt-get": aptGet, "sudo": sudo} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(script, args...)
	cmd.Env = append(os.Environ(),
		"PATH="+bin+":"+os.Getenv("PATH"),
		"SLIPWAY_DEPS_PACKAGES="+packages,
		"DEPS_CALLS="+log,
		"DEPS_ROOT="+fakeRoot(t),
	)
	b, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	c, _ := os.ReadFile(log)
	return string(b), string(c), cmd.ProcessState.ExitCode()
}

// fakeRoots holds each test's directory whose files stand for installed packages.
var fakeRoots sync.Map // *testing.T -> string

// fakeRoot is the test's directory whose files stand for installed packages.
func fakeRoot(t *testing.T) string {
	t.Helper()
	if dir, ok := fakeRoots.Load(t); ok {
		return dir.(string)
	}
	dir := t.TempDir()
	fakeRoots.Store(t, dir)
	t.Cleanup(func() { fakeRoots.Delete(t) })
	return dir
}

// packages is a deps.sh package list whose probes are files under the test's fake root.
func packages(t *testing.T, lines ...string) string {
	root := fakeRoot(t)
	var b strings.Builder
	for _, l := range lines {
		f := strings.Fields(l) // package needs...
		b.WriteString(f[0] + " " + filepath.Join(root, f[0]) + " " + strings.Join(f[1:], " ") + "\n")
	}
	return b.String()
}

// make test (hack/deps.sh test) installs what make test needs and is missing, says so, and leaves
// alone what only make dev needs.
func TestDeps_MakeTestInstallsWhatItNeedsAndSaysWhat(t *testing.T) {
	list := packages(t, "pkg-test test dev", "pkg-dev dev", "pkg-present test")
	if err := os.WriteFile(filepath.Join(fakeRoot(t), "pkg-present"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, calls, code := depsScript(t, list, "test")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(calls, "apt-get install -y -qq pkg-test\n") || strings.Contains(calls, "pkg-dev") || strings.Contains(calls, "pkg-present") {
		t.Errorf("apt-get calls:\n%s\nwant one install of pkg-test alone", calls)
	}
	for _, want := range []string{"missing Debian package(s) for make test: pkg-test; installing", "installed pkg-test"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
}

// With nothing missing, make dev's and make test's step prints nothing and runs no apt-get.
func TestDeps_NothingMissingIsSilent(t *testing.T) {
	list := packages(t, "pkg-a test dev")
	if err := os.WriteFile(filepath.Join(fakeRoot(t), "pkg-a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{"test", "dev"} {
		out, calls, code := depsScript(t, list, need)
		if code != 0 || out != "" || calls != "" {
			t.Errorf("hack/deps.sh %s with nothing missing: exit %d, output %q, calls %q; want 0 and nothing", need, code, out, calls)
		}
	}
}

// --check still only checks: it names what is missing and the command, and installs nothing.
func TestDeps_CheckInstallsNothing(t *testing.T) {
	out, calls, code := depsScript(t, packages(t, "pkg-dev dev"), "--check", "dev")
	if code != 1 || calls != "" {
		t.Errorf("exit %d, calls %q; want 1 and none", code, calls)
	}
	if !strings.Contains(out, "missing Debian package(s) for make dev: pkg-dev") || !strings.Contains(out, "apt-get install -y pkg-dev") {
		t.Errorf("the output does not name the package and the command:\n%s", out)
	}
}

// make test, make dev and make dev-up run the installing form first, not --check.
func TestDeps_MakeTestAndMakeDevInstall(t *testing.T) {
	for target, want := range map[string]string{"test": "hack/deps.sh test", "dev": "hack/deps.sh dev", "dev-up": "hack/deps.sh dev"} {
		cmd := exec.Command("make", "-n", "--no-print-directory", target)
		cmd.Dir = filepath.Join("..", "..")
		// Run by make test, the test inherits make's flags and variables: leave them out.
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "MAKEOVERRIDES" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		if first, _, _ := strings.Cut(string(out), "\n"); first != want {
			t.Errorf("make %s runs %q first, want %q:\n%s", target, first, want, out)
		}
	}
}
