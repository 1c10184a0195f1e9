//go:build e2e

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// TestCompletion: slipway completion bash|zsh|fish each print a script its shell accepts; bash,
// with the script loaded, completes names it asks slipway for; and slipway __complete (what
// every script calls) answers names from the manager, and nothing, quietly, when the manager
// cannot be reached.
func TestCompletion(t *testing.T) {
	m, cfg := shared(t)
	t.Run("Scripts", func(t *testing.T) { completionScripts(t, cfg) })
	t.Run("Bash", func(t *testing.T) { completionInBash(t, m, cfg) })
	t.Run("Fish", func(t *testing.T) { completionInFish(t, m, cfg) })
	t.Run("Names", func(t *testing.T) { completionNames(t, m, cfg) })
}

// completionScripts checks each shell's script: its header and its call of slipway __complete,
// and its syntax by the shell itself (-n: read, not run) where the shell is installed (bash
// always is; zsh and fish are checked by their header alone where they are not, said in the log).
func completionScripts(t *testing.T, cfg string) {
	for _, sh := range []struct {
		shell, header string
		check         []string
	}{
		{"bash", "# bash completion V2 for slipway", []string{"bash", "-n"}},
		{"zsh", "#compdef slipway\ncompdef _slipway slipway\n", []string{"zsh", "-n"}},
		{"fish", "# fish completion for slipway", []string{"fish", "--no-execute"}},
	} {
		r := proc(t, cfg, managertest.Vera, 0, "completion", sh.shell)
		if !strings.HasPrefix(r.Stdout, sh.header) || !strings.Contains(r.Stdout, "__complete") || r.Stderr != "" {
			t.Errorf("slipway completion %s: want a script starting %q that calls slipway __complete; stderr %q, script:\n%.300s",
				sh.shell, sh.header, r.Stderr, r.Stdout)
			continue
		}
		bin, err := exec.LookPath(sh.check[0])
		if err != nil {
			t.Fatalf("%s is not installed (hack/deps.sh test installs it): %v", sh.shell, err)
		}
		path := filepath.Join(t.TempDir(), "slipway."+sh.shell)
		if err := os.WriteFile(path, []byte(r.Stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, append(sh.check[1:], path)...).CombinedOutput(); err != nil {
			t.Errorf("%s refuses slipway's completion script: %v\n%s", strings.Join(sh.check, " "), err, out)
		}
	}
}

// completionInBash loads the bash script into bash and completes as a user's Tab would
// (COMP_WORDS, COMP_CWORD): the script runs slipway __complete, here against the manager.
// _get_comp_words_by_ref is the bash-completion package's word splitter, which the script
// expects from the user's shell; a minimal one stands in for it.
func completionInBash(t *testing.T, m *managertest.Manager, cfg string) {
	script := proc(t, cfg, managertest.Vera, 0, "completion", "bash").Stdout
	path := filepath.Join(t.TempDir(), "slipway.bash")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		t.Helper()
		prog := `source "$1"; shift
_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9
__start_slipway
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command("bash", append([]string{"-c", prog, "bash", path}, words...)...)
		cmd.Env = append(envWithout("SLIPWAY_"), config.EnvConfig+"="+cfg, EnvContext+"="+managertest.Vera)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("completing %q in bash: %v\n%s", words, err, errOut.String())
		}
		return strings.Fields(out.String())
	}
	if got := complete("slipway", "cluster", "l"); !slices.Equal(got, []string{"list"}) {
		t.Errorf("bash completes slipway cluster l to %q, want list", got)
	}
	if got := complete("slipway", "cluster", "get", "prod"); !slices.Equal(got, []string{"prod-1"}) {
		t.Errorf("bash completes slipway cluster get prod to %q, want prod-1 (from the manager)", got)
	}
	// bash puts the one match on the command line quoted: dev-1\,staging-1 is the word dev-1,staging-1.
	if got := complete("slipway", "deploy", m.Operator, "1.1.0", "--clusters", "dev-1,st"); !slices.Equal(got, []string{`dev-1\,staging-1`}) {
		t.Errorf("bash completes --clusters dev-1,st to %q, want dev-1\\,staging-1", got)
	}
	seed := m.Seed.ID
	if got := complete("slipway", "deployment", "get", seed[:8]); !slices.Equal(got, []string{seed}) {
		t.Errorf("bash completes slipway deployment get %s to %q, want the seed deployment %s", seed[:8], got, seed)
	}
}

// completionInFish loads the fish script into fish and asks fish what it completes (complete
// -C).
func completionInFish(t *testing.T, m *managertest.Manager, cfg string) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Fatalf("fish is not installed (hack/deps.sh test installs it): %v", err)
	}
	script := proc(t, cfg, managertest.Vera, 0, "completion", "fish").Stdout
	path := filepath.Join(t.TempDir(), "slipway.fish")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{
		"slipway cluster get prod":                                    "prod-1\tProduction",
		"slipway deploy " + m.Operator + " 1.1.0 --clusters dev-1,st": "dev-1,staging-1",
	} {
		cmd := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, path, line)
		cmd.Env = append(envWithout("SLIPWAY_"), config.EnvConfig+"="+cfg, EnvContext+"="+managertest.Vera)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("fish completes %q to %q (%v), want %q", line, out, err, want)
		}
	}
}

// complRun is the answer of slipway __complete: the completions (value and description) and
// the directive.
type complRun struct {
	Values, Descriptions []string
	Directive            string
}

// completeNames runs slipway __complete ARGS as vera (the context named by $SLIPWAY_CONTEXT)
// and parses its answer.
func completeNames(t *testing.T, cfg string, args ...string) complRun {
	t.Helper()
	return completeAs(t, cfg, managertest.Vera, args...)
}

func completeAs(t *testing.T, cfg, user string, args ...string) complRun {
	t.Helper()
	r := proc(t, cfg, user, 0, append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, ":") {
		t.Fatalf("slipway __complete %s: no directive line last:\n%s", strings.Join(args, " "), r.Stdout)
	}
	c := complRun{Directive: last}
	for _, l := range lines[:len(lines)-1] {
		v, d, _ := strings.Cut(l, "\t")
		c.Values, c.Descriptions = append(c.Values, v), append(c.Descriptions, d)
	}
	return c
}

// completionNames: the names each verb completes come from the manager (4 is cobra's
// ShellCompDirectiveNoFileComp: no file names offered instead).
func completionNames(t *testing.T, m *managertest.Manager, cfg string) {
	want := m.ClusterNames()
	slices.Sort(want)
	if c := completeNames(t, cfg, "cluster", "get", ""); !slices.Equal(c.Values, want) || c.Directive != ":4" || c.Descriptions[0] != "Dev" {
		t.Errorf("cluster get completes %+v, want %v with their environments", c, want)
	}
	if c := completeNames(t, cfg, "operator", "get", ""); !slices.Contains(c.Values, m.Operator) {
		t.Errorf("operator get completes %+v, want %s among them", c, m.Operator)
	}
	if c := completeNames(t, cfg, "crd", "validate", ""); !slices.Contains(c.Values, managertest.WidgetCRD) {
		t.Errorf("crd validate completes %+v, want %s among them", c, managertest.WidgetCRD)
	}
	c := completeNames(t, cfg, "deployment", "get", "")
	if i := slices.Index(c.Values, m.Seed.ID); i < 0 || c.Descriptions[i] != m.Operator+" 1.0.0 Completed" {
		t.Errorf("deployment get completes %+v, want the seed deployment described by operator, version and status", c)
	}
	if c := completeNames(t, cfg, "deployment", "cancel", ""); slices.Contains(c.Values, m.Seed.ID) {
		t.Errorf("deployment cancel completes the finished seed deployment: %+v", c)
	}
	if c := completeNames(t, cfg, "cluster", "list", "--environment", ""); !slices.Equal(c.Values, []string{"Dev", "Staging", "Production"}) {
		t.Errorf("--environment completes %+v", c)
	}
	// Flags complete from the manager after the arguments too, and a comma-separated flag its
	// last item.
	if c := completeNames(t, cfg, "crd", "approve", managertest.WidgetCRD, "--operator", ""); !slices.Contains(c.Values, m.Operator) {
		t.Errorf("crd approve NAME --operator completes %+v, want %s among them", c, m.Operator)
	}
	deploy := []string{"deploy", m.Operator, managertest.CompatibleVersion}
	if c := completeNames(t, cfg, append(deploy, "--clusters", "")...); !slices.Equal(c.Values, want) {
		t.Errorf("deploy OPERATOR VERSION --clusters completes %+v, want %v", c, want)
	}
	if c := completeNames(t, cfg, append(deploy, "--clusters", "dev-1,")...); !slices.Equal(c.Values, []string{"dev-1,dev-2", "dev-1,prod-1", "dev-1,staging-1"}) {
		t.Errorf("--clusters dev-1, completes %+v, want the other clusters after dev-1,", c)
	}
	if c := completeNames(t, cfg, append(deploy, "--environment", "Dev,")...); !slices.Equal(c.Values, []string{"Dev,Staging", "Dev,Production"}) {
		t.Errorf("deploy --environment Dev, completes %+v", c)
	}
	if c := completeNames(t, cfg, "cluster", "list", "--context", ""); !slices.Equal(slices.Sorted(slices.Values(c.Values)), users) {
		t.Errorf("--context completes %+v, want the config file's contexts", c)
	}
	// A manager that cannot be reached: nothing offered, no error, exit 0; --context on the
	// command line picks the context the names come from.
	mixed := filepath.Join(t.TempDir(), "mixed.yaml")
	mc, _ := config.Load(mixed)
	mc.Upsert(config.Context{Name: managertest.Vera, Server: m.URL, CertificateAuthority: m.CAFile}, config.User{Name: managertest.Vera, Token: m.Token(managertest.Vera)})
	mc.Upsert(config.Context{Name: "nowhere", Server: "https://127.0.0.1:1"}, config.User{Name: "nowhere", Token: "x"})
	if err := mc.Save(); err != nil {
		t.Fatal(err)
	}
	if c := completeAs(t, mixed, "nowhere", "cluster", "get", ""); len(c.Values) != 0 || c.Directive != ":4" {
		t.Errorf("completing without a manager: %+v", c)
	}
	if c := completeAs(t, mixed, "nowhere", "--context", managertest.Vera, "cluster", "get", ""); !slices.Equal(c.Values, want) {
		t.Errorf("completing with --context vera before the verb: %+v, want %v", c, want)
	}
	if c := completeAs(t, mixed, "nowhere", "cluster", "get", "--context", managertest.Vera, ""); !slices.Equal(c.Values, want) {
		t.Errorf("completing with --context vera after the verb: %+v, want %v", c, want)
	}
}
