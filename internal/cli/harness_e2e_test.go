//go:build e2e

package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The CLI's tests run against a real manager: managertest's shared `manager serve` (the built
// cmd/manager over TLS, SQLite, four registered kube-apiservers running workloads, the
// widget-operator chart with three versions, 1.0.0 deployed everywhere). The command tests run
// slipway in-process through a Factory over buffers (terminal on and off); the scripts under
// testdata/script run it as a process (testscript re-executes this test binary as `slipway`).

func TestMain(m *testing.M) {
	testscript.Main(stopping{m}, map[string]func(){"slipway": func() { os.Exit(Main()) }})
}

// stopping runs the tests, then stops the shared manager and fleet. testscript.Main ends the
// process itself (os.Exit, as RunMain does now too), so the stopping has to happen inside its
// Run: a TestMain that stops them after RunMain returns never gets there, and left the fleet's
// etcd data and the manager's files behind on every run.
type stopping struct{ m *testing.M }

func (s stopping) Run() int { return testenv.StopFleet(managertest.StopShared(s.m.Run())) }

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// users are the harness's users, each a context of the same name in the test config.
var users = []string{managertest.Alice, managertest.Bob, managertest.Otto, managertest.Vera}

// writeConfig writes a contexts file with a context per user for m (alice current) and returns
// its path.
func writeConfig(tb testing.TB, m *managertest.Manager, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "slipway.yaml")
	cfg, err := config.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	for _, u := range slicesReversed(users) {
		cfg.Upsert(config.Context{Name: u, Server: m.URL, CertificateAuthority: m.CAFile}, config.User{Name: u, Token: m.Token(u)})
	}
	if err := cfg.Save(); err != nil {
		tb.Fatal(err)
	}
	return path
}

func slicesReversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// cliRun is one in-process run of slipway.
type cliRun struct {
	Stdout, Stderr string
	Code           int
}

// term says whether the run's streams are terminals, and what standard input holds.
type term struct {
	TTY   bool
	Stdin string
	// Now replaces the clock (zero: the real one).
	Now time.Time
}

// run runs slipway with args as user (a context of cfgPath) through a test Factory.
func run(tb testing.TB, cfgPath, user string, t term, args ...string) cliRun {
	tb.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(t.Stdin)
	ios.SetStdinTTY(t.TTY)
	ios.SetStdoutTTY(t.TTY)
	ios.SetStderrTTY(t.TTY)
	ios.SetWidth(200)
	env := map[string]string{config.EnvConfig: cfgPath, EnvContext: user}
	f := NewFactory(ios, func(k string) string { return env[k] })
	if !t.Now.IsZero() {
		f.Now = func() time.Time { return t.Now }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := Run(ctx, f, args)
	return cliRun{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// mustRun is run expecting exit code want.
func mustRun(tb testing.TB, cfgPath, user string, t term, want int, args ...string) cliRun {
	tb.Helper()
	r := run(tb, cfgPath, user, t, args...)
	if r.Code != want {
		tb.Fatalf("slipway %s (as %s): exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), user, r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	dateRE = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
	timeRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z`)
	portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	// farFuture makes every time in a table a date (past a year, Relative prints the date), so
	// that normalising dates keeps the columns' widths.
	farFuture = time.Now().Add(3 * 365 * 24 * time.Hour)
)

// normalise replaces what changes from run to run with placeholders of the same width: ids,
// dates, loopback ports.
func normalise(s string) string {
	s = uuidRE.ReplaceAllString(s, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	s = timeRE.ReplaceAllString(s, "YYYY-MM-DDThh:mm:ssZ")
	s = dateRE.ReplaceAllString(s, "YYYY-MM-DD")
	return portRE.ReplaceAllStringFunc(s, func(m string) string {
		return "127.0.0.1:" + strings.Repeat("N", len(m)-len("127.0.0.1:"))
	})
}

// golden compares got (normalised) with testdata/golden/name, rewriting it with -update.
func golden(tb testing.TB, name, got string) {
	tb.Helper()
	got = normalise(got)
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		tb.Errorf("%s differs (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
