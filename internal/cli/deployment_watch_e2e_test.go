//go:build e2e

package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// TestDeploymentWatch follows real rollouts with `slipway deployment watch` and `slipway deploy
// --watch`, one after the other, on a manager of its own (its deployments change what the
// fleet's clusters run, which the shared manager's tests read): the seed deployment that has
// already ended; a Canary over the four clusters deployed and watched to Completed by the built
// binary in a pseudo-terminal, while a plain watcher and a json watcher whose stream a proxy
// cuts follow it too; a version every cluster refuses, rolled back; a deployment waiting for an
// approval (--timeout, Ctrl-C, then a rejection); one cancelled; a refused token and an unknown
// id.
func TestDeploymentWatch(t *testing.T) {
	w := newWatchWorld(t)
	t.Run("Ended", w.ended)
	t.Run("Canary", w.canary)
	t.Run("Failing", w.failing)
	t.Run("Waiting", w.waiting)
	t.Run("Cancelled", w.cancelled)
	t.Run("Refused", w.refused)
}

// brokenVersion is a version of the operator's chart whose install every cluster refuses (its
// Deployment asks for "many" replicas).
const brokenVersion = "1.2.0"

// cliBinaryEnv names a prebuilt slipway to run in the terminal instead of building cmd/slipway.
const cliBinaryEnv = "SLIPWAY_CLI_BINARY"

type watchWorld struct {
	m   *managertest.Manager
	cfg string
	bin string
}

func newWatchWorld(t *testing.T) *watchWorld {
	m := managertest.Start(t, managertest.Options{})
	w := &watchWorld{m: m, cfg: writeConfig(t, m, t.TempDir()), bin: operatorproc.BinaryOf(t, "./cmd/slipway", cliBinaryEnv)}
	files := charttest.OperatorChart(managertest.ChartName, brokenVersion, charttest.Compatible)
	files["values.yaml"] = "image: registry.example/widget-operator:v" + brokenVersion + "\nreplicas: many\n"
	m.Repo.Add(t, files)
	until(t, time.Minute, "the manager lists "+brokenVersion, func() bool {
		var op api.Operator
		m.Must(t, "GET", "/api/v1/operators/"+m.Operator, managertest.Alice, nil, http.StatusOK).JSON(t, &op)
		return slices.Contains(op.Versions, brokenVersion)
	})
	return w
}

// created waits until the operator has an active deployment of version and returns its id.
func (w *watchWorld) created(t *testing.T, version string) string {
	t.Helper()
	id := ""
	until(t, time.Minute, "a deployment of "+version+" is created", func() bool {
		var list api.DeploymentList
		w.m.Must(t, "GET", "/api/v1/deployments?active=true&operator="+url.QueryEscape(w.m.Operator), managertest.Alice, nil,
			http.StatusOK).JSON(t, &list)
		for _, d := range list.Items {
			if d.Version == version {
				id = d.ID
			}
		}
		return id != ""
	})
	return id
}

var stamp = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d) `

// ended: a deployment that has already ended is printed at once, in each mode, and its exit
// code is its outcome's.
func (w *watchWorld) ended(t *testing.T) {
	seed := w.m.Seed
	r := mustRun(t, w.cfg, managertest.Alice, term{TTY: true}, 0, "deployment", "watch", seed.ID)
	if strings.Contains(r.Stdout, "\x1b") {
		t.Errorf("an ended deployment was drawn with terminal controls: %q", r.Stdout)
	}
	want := []string{
		fmt.Sprintf(`^%s 1\.0\.0 · Direct · Completed · \d+(s|m\d\ds)$`, regexp.QuoteMeta(w.m.Operator)),
		`^deployment ` + seed.ID + ` · requested by alice$`,
		`^✓ Completed after \S+: `,
	}
	for _, c := range seed.Clusters {
		want = append(want, fmt.Sprintf(`^  ✓ %s +%s +healthy +rev %d +\d+(s|m\d\ds)$`, c.Name, c.Environment, c.HelmRevision))
	}
	matchLines(t, "the table", r.Stdout, want...)

	r = mustRun(t, w.cfg, managertest.Vera, term{}, 0, "deployment", "watch", seed.ID)
	want = []string{`^` + stamp + `deployment ` + seed.ID + ` \S+ 1\.0\.0 \(Direct\): Completed$`, `^` + stamp + `✓ Completed after `}
	for _, c := range seed.Clusters {
		want = append(want, fmt.Sprintf(`^%s%s \(%s, stage %d\): healthy, revision %d$`, stamp, c.Name, c.Environment, c.Stage+1, c.HelmRevision))
	}
	matchLines(t, "the plain lines (a Viewer's)", r.Stdout, want...)
	everyLine(t, r.Stdout, regexp.MustCompile(`^`+stamp))

	r = mustRun(t, w.cfg, managertest.Alice, term{TTY: true}, 0, "deployment", "watch", seed.ID, "-o", "json")
	checkNDJSON(t, r.Stdout, w.m.Events(t, seed.ID), seed.ID, "Completed")

	r = mustRun(t, w.cfg, managertest.Alice, term{}, 1, "deployment", "watch", seed.ID, "-o", "yaml")
	if !strings.Contains(r.Stderr, "-o yaml does not go with watching") || r.Stdout != "" {
		t.Errorf("-o yaml: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

// canary: deploy --watch in a terminal draws the rollout in place to its end and exits 0; a
// plain watcher prints each cluster's steps; a json watcher whose connection is cut resumes
// after the last event it read and prints every event once.
func (w *watchWorld) canary(t *testing.T) {
	p := startPTY(t, w.bin, w.cfg, managertest.Alice, 100, 40, "deploy", w.m.Operator, managertest.CompatibleVersion,
		"--environment", "Dev,Staging,Production", "--strategy", "canary", "--evaluation-period", "8s", "--watch")
	id := w.created(t, managertest.CompatibleVersion)
	proxy := startDropProxy(t, w.m.URL)
	plain := startBackground(t, w.cfg, managertest.Otto, "deployment", "watch", id)
	js := startBackground(t, w.cfg, managertest.Vera, "--server", proxy.URL(), "deployment", "watch", id, "--progress", "json")

	p.waitScreen(t, "waiting: approval by", time.Minute)
	until(t, time.Minute, "the plain watcher prints the wait for approval", func() bool {
		return strings.Contains(plain.Out.String(), "waiting: approval by")
	})
	w.m.ApproveAll(t, id, managertest.Bob)
	p.waitScreen(t, "evaluation period, ", 2*time.Minute)
	for i := range 2 {
		n := strings.Count(js.Out.String(), "\n")
		until(t, 2*time.Minute, "the json watcher reads another event", func() bool { return strings.Count(js.Out.String(), "\n") > n })
		if cut := proxy.drop(); cut == 0 && i == 0 {
			t.Fatal("the proxy had no connection to cut: the json watcher's stream was not open")
		}
	}

	if code := p.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("slipway deploy --watch: exit %d, want 0", code)
	}
	dep := w.m.WaitStatus(t, id, "Completed", time.Second)
	w.checkFinalScreen(t, p, &dep)
	if code := plain.wait(t, time.Minute); code != 0 {
		t.Errorf("the plain watcher: exit %d, want 0; stderr:\n%s", code, plain.Err.String())
	}
	checkPlainCanary(t, plain.Out.String(), &dep)
	if code := js.wait(t, time.Minute); code != 0 {
		t.Errorf("the json watcher: exit %d, want 0; stderr:\n%s", code, js.Err.String())
	}
	checkNDJSON(t, js.Out.String(), w.m.Events(t, id), id, "Completed")
	t.Logf("the json watcher read %d events over %d connections through the proxy", strings.Count(js.Out.String(), "\n"), proxy.accepted.Load())
	if !regexp.MustCompile(`(?m)^`+stamp+`event stream lost \(.*\); resuming after event \d+ in 1s$`).MatchString(js.Err.String()) ||
		!strings.Contains(js.Err.String(), "event stream resumed") || proxy.accepted.Load() < 2 {
		t.Errorf("the json watcher did not say it resumed (%d connections through the proxy); stderr:\n%s", proxy.accepted.Load(), js.Err.String())
	}
}

// checkFinalScreen: the terminal holds the final table once (each frame was drawn over the
// last one, none in an alternate screen), every line fits, and the cursor is shown again.
func (w *watchWorld) checkFinalScreen(t *testing.T, p *ptyRun, dep *api.Deployment) {
	t.Helper()
	all := strings.Join(p.lines(), "\n")
	head := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(w.m.Operator) + ` 1\.1\.0 · Canary · `)
	if n := len(head.FindAllString(all, -1)); n != 1 {
		t.Errorf("the terminal (scrollback and screen) holds %d frame headers, want 1 (frames are redrawn in place):\n%s", n, all)
	}
	want := []string{
		`^Deployment ` + dep.ID + ` created \(Queued\); watching it\.$`,
		`^` + regexp.QuoteMeta(w.m.Operator) + ` 1\.1\.0 · Canary · Completed · \d+(s|m\d\ds)$`,
		`^stage 1  █+  1/1 healthy$`, `^stage 2  █+  1/1 healthy$`, `^stage 3  █+  2/2 healthy$`,
		`^✓ Completed after \S+`,
	}
	for _, c := range dep.Clusters {
		want = append(want, fmt.Sprintf(`^  ✓ %s +%s +healthy +rev %d +\d+(s|m\d\ds)$`, c.Name, c.Environment, c.HelmRevision))
	}
	screen := p.screen()
	matchLines(t, "the final screen", screen, want...)
	for _, l := range strings.Split(screen, "\n") {
		if runewidth.StringWidth(l) > 99 {
			t.Errorf("a line fills the 100-column terminal: %q", l)
		}
	}
	raw := p.rawOutput()
	ups := regexp.MustCompile(`\x1b\[\d+A`).FindAllString(raw, -1)
	t.Logf("slipway drew %d frames in place (%d bytes to the terminal); its final screen:\n%s", len(ups)+1, len(raw), screen)
	switch {
	case p.cursorHidden():
		t.Error("the cursor is still hidden after slipway exited")
	case p.altScreen():
		t.Error("the terminal is in the alternate screen")
	case len(ups) < 2:
		t.Errorf("the output moved the cursor up %d times: the table was not redrawn in place", len(ups))
	case strings.LastIndex(raw, "\x1b[?25h") < strings.LastIndex(raw, "\x1b[?25l"):
		t.Error("the output hides the cursor after it last shows it")
	}
}

// checkPlainCanary: a timestamped line per change: the wait for approval, each cluster
// validating and then healthy at its revision, the end.
func checkPlainCanary(t *testing.T, out string, dep *api.Deployment) {
	t.Helper()
	everyLine(t, out, regexp.MustCompile(`^`+stamp))
	want := []string{
		`^` + stamp + `deployment ` + dep.ID + ` \S+ 1\.1\.0 \(Canary\): WaitingApproval.* — waiting: approval by `,
		`^` + stamp + `✓ Completed after \S+`,
	}
	for _, c := range dep.Clusters {
		prefix := fmt.Sprintf(`^%s%s \(%s, stage %d\): `, stamp, c.Name, c.Environment, c.Stage+1)
		want = append(want, prefix+`pending — waiting: approval by `, prefix+fmt.Sprintf(`validating, revision %d`, c.HelmRevision),
			prefix+fmt.Sprintf(`healthy, revision %d$`, c.HelmRevision))
	}
	matchLines(t, "the plain lines", out, want...)
}

// failing: deploy --watch of a version the clusters refuse: the deployment rolls back and the
// watch exits 1, saying so.
func (w *watchWorld) failing(t *testing.T) {
	r := startBackground(t, w.cfg, managertest.Alice, "deploy", w.m.Operator, brokenVersion, "--clusters", "dev-1,dev-2",
		"--strategy", "canary", "--evaluation-period", "5s", "--watch", "--progress", "plain")
	id := w.created(t, brokenVersion)
	w.m.ApproveAll(t, id, managertest.Bob)
	if code := r.wait(t, 4*time.Minute); code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, r.Out.String(), r.Err.String())
	}
	dep := w.m.Deployment(t, id)
	if dep.Status != "RolledBack" {
		t.Fatalf("the deployment is %s (%s), want RolledBack", dep.Status, dep.Reason)
	}
	matchLines(t, "the plain lines", r.Out.String(),
		`^`+stamp+`dev-1 \(Dev, stage 1\): (failed|rolledBack)`,
		`^`+stamp+`↺ RolledBack after \S+: `)
	matchLines(t, "the messages", r.Err.String(),
		`^Deployment `+id+` created \(Queued\); watching it\.$`,
		`^error: deployment `+id+` ended RolledBack: \S`)
}

// waiting: a deployment waiting for an approval: --timeout passes (exit 8); Ctrl-C in a
// terminal stops the watch (exit 2) with the cursor shown again; a rejection fails it (exit 1).
func (w *watchWorld) waiting(t *testing.T) {
	dep := w.m.Deploy(t, managertest.Alice, map[string]any{"operator": w.m.Operator, "version": brokenVersion,
		"clusters": []string{"dev-2"}, "strategy": "Direct"})
	w.m.WaitStatus(t, dep.ID, "WaitingApproval", time.Minute)

	r := mustRun(t, w.cfg, managertest.Alice, term{}, 8, "deployment", "watch", dep.ID, "--timeout", "3s")
	matchLines(t, "the lines before the timeout", r.Stdout, `^`+stamp+`deployment `+dep.ID+` .*: WaitingApproval — waiting: approval by an Admin$`)
	if !strings.Contains(r.Stderr, "error: deployment "+dep.ID+" is still WaitingApproval after --timeout 3s;") {
		t.Errorf("the timeout's message: %q", r.Stderr)
	}

	p := startPTY(t, w.bin, w.cfg, managertest.Alice, 100, 30, "deployment", "watch", dep.ID)
	p.waitScreen(t, "waiting: approval by an Admin", 30*time.Second)
	p.interrupt(t)
	if code := p.wait(t, 30*time.Second); code != 2 {
		t.Errorf("Ctrl-C: exit %d, want 2", code)
	}
	screen := p.screen()
	matchLines(t, "the screen after Ctrl-C", screen, `^stopped watching: the deployment goes on$`,
		`^follow it again: slipway deployment watch `+dep.ID+`$`, `^cancelled$`)
	if p.cursorHidden() {
		t.Error("Ctrl-C left the cursor hidden")
	}

	bg := startBackground(t, w.cfg, managertest.Otto, "deployment", "watch", dep.ID, "--progress", "plain")
	until(t, 30*time.Second, "the plain watcher prints the deployment", func() bool { return strings.Contains(bg.Out.String(), "WaitingApproval") })
	for _, a := range w.m.Approvals(t, dep.ID, "pending") {
		w.m.Must(t, "POST", "/api/v1/approvals/"+a.ID+"/reject", managertest.Bob, api.DecisionRequest{Comment: "not this one"}, http.StatusOK)
	}
	if code := bg.wait(t, time.Minute); code != 1 {
		t.Fatalf("a rejected deployment: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, bg.Out.String(), bg.Err.String())
	}
	matchLines(t, "the plain lines", bg.Out.String(), `^`+stamp+`✗ Failed after \S+: approval .*rejected by bob: not this one$`)
	matchLines(t, "the messages", bg.Err.String(), `^error: deployment `+dep.ID+` ended Failed: approval `)
}

// cancelled: a deployment cancelled while it is watched ends the watch with exit 2.
func (w *watchWorld) cancelled(t *testing.T) {
	dep := w.m.Deploy(t, managertest.Alice, map[string]any{"operator": w.m.Operator, "version": brokenVersion,
		"clusters": []string{"dev-1"}, "strategy": "Direct"})
	w.m.WaitStatus(t, dep.ID, "WaitingApproval", time.Minute)
	bg := startBackground(t, w.cfg, managertest.Alice, "deployment", "watch", dep.ID)
	until(t, 30*time.Second, "the watcher prints the deployment", func() bool { return strings.Contains(bg.Out.String(), "WaitingApproval") })
	w.m.Must(t, "DELETE", "/api/v1/deployments/"+dep.ID, managertest.Otto, nil, http.StatusAccepted)
	if code := bg.wait(t, time.Minute); code != 2 {
		t.Fatalf("a cancelled deployment: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, bg.Out.String(), bg.Err.String())
	}
	matchLines(t, "the plain lines", bg.Out.String(), `^`+stamp+`■ Cancelled after \S+`)
	matchLines(t, "the messages", bg.Err.String(), `^deployment `+dep.ID+` was cancelled: \S`, `^cancelled$`)
}

// refused: a token the manager refuses is exit 4; an id that is no deployment is exit 1; both
// with the manager's message.
func (w *watchWorld) refused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slipway.yaml")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Upsert(config.Context{Name: "mallory", Server: w.m.URL, CertificateAuthority: w.m.CAFile}, config.User{Name: "mallory", Token: "not-a-token"})
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, path, "mallory", term{}, 4, "deployment", "watch", w.m.Seed.ID)
	matchLines(t, "a refused token's messages", r.Stderr, `^error: \S`, `^The manager does not accept the token`)
	r = mustRun(t, w.cfg, managertest.Alice, term{}, 1, "deployment", "watch", "no-such-deployment")
	matchLines(t, "an unknown id's messages", r.Stderr, `^error: .*no-such-deployment`)
	if r.Stdout != "" {
		t.Errorf("an unknown id printed %q", r.Stdout)
	}
}

// matchLines checks that each pattern matches a line of out.
func matchLines(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		if !slices.ContainsFunc(lines, re.MatchString) {
			t.Errorf("%s: no line matches %s in:\n%s", what, p, out)
		}
	}
}

// everyLine checks that every line of out matches re.
func everyLine(t *testing.T, out string, re *regexp.Regexp) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if !re.MatchString(l) {
			t.Errorf("the line %q does not match %s", l, re)
		}
	}
}

// checkNDJSON: out is the deployment's events as the manager lists them, each once and in
// order, one JSON object a line, then the end with the deployment's status.
func checkNDJSON(t *testing.T, out string, events []api.DeploymentEvent, id, status string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(events)+1 {
		t.Fatalf("%d lines for %d events and the end:\n%s", len(lines), len(events), out)
	}
	for i, e := range events {
		var got api.DeploymentEvent
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, lines[i])
		}
		if got.ID != e.ID || got.Type != e.Type || got.Cluster != e.Cluster || got.Message != e.Message || got.DeploymentID != id {
			t.Errorf("line %d is %+v, want %+v", i+1, got, e)
		}
	}
	var end map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end["type"] != "end" ||
		end["status"] != status || end["deploymentId"] != id {
		t.Errorf("the last line is %s, want the end with status %s", lines[len(lines)-1], status)
	}
}
