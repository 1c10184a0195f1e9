//go:build e2e

package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// shared is the shared manager and a contexts file for its users.
func shared(t *testing.T) (*managertest.Manager, string) {
	t.Helper()
	m := managertest.Shared(t)
	return m, writeConfig(t, m, t.TempDir())
}

func TestClusterList(t *testing.T) {
	m, cfg := shared(t)
	tty := mustRun(t, cfg, managertest.Vera, term{TTY: true, Now: farFuture}, 0, "cluster", "list")
	golden(t, "cluster_list_tty.golden", tty.Stdout)
	piped := mustRun(t, cfg, managertest.Vera, term{}, 0, "cluster", "list")
	golden(t, "cluster_list_piped.golden", piped.Stdout)
	if !strings.Contains(piped.Stdout, "\t") || strings.Contains(piped.Stdout, "NAME") {
		t.Errorf("piped output is TSV without a header:\n%s", piped.Stdout)
	}
	js := mustRun(t, cfg, managertest.Vera, term{}, 0, "cluster", "list", "-o", "json")
	var got []api.Cluster
	if err := json.Unmarshal([]byte(js.Stdout), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, js.Stdout)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	want := m.ClusterNames()
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("cluster list -o json names %v, want %v", names, want)
	}
	yml := mustRun(t, cfg, managertest.Vera, term{}, 0, "cluster", "list", "--environment", "Production", "-o", "yaml")
	if !strings.Contains(yml.Stdout, "name: prod-1") || strings.Contains(yml.Stdout, "dev-1") {
		t.Errorf("cluster list --environment Production -o yaml:\n%s", yml.Stdout)
	}
}

func TestOperatorAndCRDViews(t *testing.T) {
	m, cfg := shared(t)
	op := mustRun(t, cfg, managertest.Vera, term{TTY: true, Now: farFuture}, 0, "operator", "get", m.Operator)
	golden(t, "operator_get.golden", op.Stdout)
	list := mustRun(t, cfg, managertest.Vera, term{TTY: true, Now: farFuture}, 0, "operator", "list")
	golden(t, "operator_list.golden", list.Stdout)
	crd := mustRun(t, cfg, managertest.Vera, term{TTY: true, Now: farFuture}, 0, "crd", "get", managertest.WidgetCRD)
	golden(t, "crd_get.golden", crd.Stdout)
	rep := mustRun(t, cfg, managertest.Vera, term{}, 0, "crd", "validate", managertest.WidgetCRD,
		"--operator", m.Operator, "--version", managertest.BreakingVersion, "-o", "json")
	var report api.ValidationReport
	if err := json.Unmarshal([]byte(rep.Stdout), &report); err != nil {
		t.Fatal(err)
	}
	if !report.Breaking || len(report.Changes) == 0 {
		t.Errorf("validating the breaking version: %+v", report)
	}
	text := mustRun(t, cfg, managertest.Vera, term{TTY: true}, 0, "crd", "validate", managertest.WidgetCRD,
		"--operator", m.Operator, "--version", managertest.BreakingVersion)
	if !strings.Contains(text.Stdout, "BREAKING") || !strings.Contains(text.Stdout, "BREAKING  KIND") {
		t.Errorf("crd validate's table:\n%s", text.Stdout)
	}
}

func TestDeploymentGetSeed(t *testing.T) {
	m, cfg := shared(t)
	r := mustRun(t, cfg, managertest.Vera, term{TTY: true, Now: farFuture}, 0, "deployment", "get", m.Seed.ID)
	golden(t, "deployment_get_seed.golden", r.Stdout)
	js := mustRun(t, cfg, managertest.Vera, term{}, 0, "deployment", "get", m.Seed.ID, "-o", "json")
	var d api.Deployment
	if err := json.Unmarshal([]byte(js.Stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.ID != m.Seed.ID || d.Status != "Completed" || len(d.Clusters) != len(m.Clusters) {
		t.Errorf("deployment get -o json: %+v", d)
	}
	missing := mustRun(t, cfg, managertest.Vera, term{}, 1, "deployment", "get", "00000000-0000-0000-0000-000000000000")
	if !strings.Contains(missing.Stderr, "not found") {
		t.Errorf("a missing deployment: %q", missing.Stderr)
	}
}

func TestDeployDryRun(t *testing.T) {
	m, cfg := shared(t)
	before := deploymentCount(t, m)
	r := mustRun(t, cfg, managertest.Otto, term{TTY: true, Now: farFuture}, 0, "deploy", m.Operator, managertest.BreakingVersion,
		"--environment", "Dev,Staging", "--strategy", "canary", "--initial", "40", "--evaluation-period", "2m", "--dry-run")
	golden(t, "deploy_dry_run.golden", r.Stdout)
	js := mustRun(t, cfg, managertest.Otto, term{}, 0, "deploy", m.Operator, managertest.BreakingVersion,
		"--environment", "Dev,Staging", "--strategy", "canary", "--initial", "40", "--evaluation-period", "2m", "--bake-window", "30m", "--dry-run", "-o", "json")
	var plan api.DryRun
	if err := json.Unmarshal([]byte(js.Stdout), &plan); err != nil {
		t.Fatal(err)
	}
	var cfgJSON bytes.Buffer
	if err := json.Compact(&cfgJSON, plan.Config); err != nil {
		t.Fatal(err)
	}
	if !plan.DryRun || len(plan.Stages) != 2 || len(plan.Clusters) != 3 || len(plan.Approvals) == 0 ||
		cfgJSON.String() != `{"initialPercentage":40,"evaluationPeriod":"PT2M"}` || plan.BakeWindow != "PT30M" {
		t.Errorf("the plan: %d stages, %d clusters, %d approvals, config %s, bake window %s", len(plan.Stages), len(plan.Clusters), len(plan.Approvals), cfgJSON.String(), plan.BakeWindow)
	}
	if after := deploymentCount(t, m); after != before {
		t.Errorf("a dry run stored a deployment: %d before, %d after", before, after)
	}
}

// deploymentCount is the number of deployments the manager has.
func deploymentCount(t *testing.T, m *managertest.Manager) int {
	t.Helper()
	var l api.DeploymentList
	m.Must(t, http.MethodGet, "/api/v1/deployments?limit=1000", managertest.Alice, nil, http.StatusOK).JSON(t, &l)
	return len(l.Items)
}

// TestViewerIsRefused: a Viewer reads everything, and every change is refused by the manager:
// exit 4 with the manager's message.
func TestViewerIsRefused(t *testing.T) {
	m, cfg := shared(t)
	before := deploymentCount(t, m)
	for _, args := range [][]string{
		{"deploy", m.Operator, managertest.CompatibleVersion, "--clusters", "dev-1", "--strategy", "direct"},
		{"cluster", "remove", "dev-1", "--yes"},
		{"operator", "refresh", m.Operator},
		{"deployment", "cancel", m.Seed.ID, "--yes"},
		{"deployment", "rollback", m.Seed.ID, "--yes"},
		{"audit"},
	} {
		r := mustRun(t, cfg, managertest.Vera, term{}, ExitAuth, args...)
		if !strings.Contains(r.Stderr, "needs one of the roles") || !strings.Contains(r.Stderr, "vera") {
			t.Errorf("slipway %s as a Viewer: stderr %q, want the manager's message", strings.Join(args, " "), r.Stderr)
		}
	}
	if after := deploymentCount(t, m); after != before {
		t.Errorf("a Viewer's deploy was stored: %d before, %d after", before, after)
	}
	mustRun(t, cfg, managertest.Vera, term{}, 0, "cluster", "get", "dev-1")
}

// TestBadInputSendsNothing: usage errors exit 1 with a clear message before any request (the
// context points at a server that does not exist, so a request would fail differently).
func TestBadInputSendsNothing(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "c.yaml")
	cfg, _ := config.Load(cfgPath)
	cfg.Upsert(config.Context{Name: "nowhere", Server: "https://127.0.0.1:1"}, config.User{Name: "nowhere", Token: "x"})
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "sideways"}, `--strategy must be canary, bluegreen, rolling or direct, not "sideways"`},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a"}, "--strategy is required"},
		{[]string{"deploy", "op", "1.0.0", "--strategy", "canary"}, "give the targets"},
		{[]string{"deploy", "op", "--clusters", "a", "--strategy", "canary"}, "give the operator and the version"},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--environment", "Dev", "--strategy", "canary"}, "do not go together"},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "rolling", "--initial", "5"}, "--initial is not a setting of the rolling strategy"},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "canary", "--initial", "0"}, "--initial: must be a percentage"},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "canary", "--stages", "10,50"}, "--stages: the last stage must be 100"},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "bluegreen", "--validation-period", "soon"}, "--validation-period must be a duration"},
		{[]string{"deploy", "op", "1.0.0", "--environment", "Prod", "--strategy", "direct"}, `--environment must be among Dev, Staging, Production, not "Prod"`},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "direct", "--bake-window", "P2D"}, "--bake-window: must be at most PT24H"},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "direct", "--bake-window", "-5m"}, "--bake-window: must not be negative"},
		{[]string{"deploy", "op", "1.0.0", "--clusters", "a", "--strategy", "direct", "--bake-window", "soon"}, "--bake-window must be a duration"},
		{[]string{"deploy", "-f", "req.json", "--bake-window", "5m"}, "--bake-window does not go with -f"},
		{[]string{"cluster", "add", "x", "--kubeconfig", "k"}, `required flag(s) "environment" not set`},
		{[]string{"approval", "reject", "id"}, "--comment is required"},
		{[]string{"deployment", "cancel", "id"}, "refusing without --yes when not on a terminal"},
		{[]string{"cluster", "list", "--limit", "-1"}, "--limit must be 0 (all) or more"},
		{[]string{"audit", "--since", "yesterday"}, "--since must be an RFC 3339 time"},
		{[]string{"cluster", "list", "-o", "xml"}, "--output must be table, json or yaml"},
		{[]string{"cluster", "list", "--bogus"}, "unknown flag: --bogus"},
	} {
		r := run(t, cfgPath, "nowhere", term{}, tc.args...)
		if r.Code != ExitError || !strings.Contains(r.Stderr, tc.want) || !strings.Contains(r.Stderr, "--help' for usage") {
			t.Errorf("slipway %s: exit %d, stderr %q; want exit 1 with %q", strings.Join(tc.args, " "), r.Code, r.Stderr, tc.want)
		}
		if strings.Contains(r.Stderr, "127.0.0.1:1") {
			t.Errorf("slipway %s reached for the server: %q", strings.Join(tc.args, " "), r.Stderr)
		}
	}
	// -f: the design's JSON checked as the manager reads it.
	req := filepath.Join(dir, "req.json")
	if err := os.WriteFile(req, []byte(`{"operator":"op","version":"1","clusters":["a"],"strategy":"Canary","canaryConfig":{"initialPercent":10}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, cfgPath, "nowhere", term{}, "deploy", "-f", req)
	if r.Code != ExitError || !strings.Contains(r.Stderr, `unknown field "canaryConfig.initialPercent"`) {
		t.Errorf("deploy -f with an unknown field: exit %d, %q", r.Code, r.Stderr)
	}
}

// TestConfirmation: cancel and rollback ask on a terminal; "no" cancels (exit 2) and nothing
// is sent.
func TestConfirmation(t *testing.T) {
	m, cfg := shared(t)
	r := mustRun(t, cfg, managertest.Alice, term{TTY: true, Stdin: "n\n"}, ExitCancelled, "deployment", "rollback", m.Seed.ID)
	if !strings.Contains(r.Stderr, "Roll deployment "+m.Seed.ID+" back? [y/N]") || !strings.Contains(r.Stderr, "cancelled") {
		t.Errorf("stderr %q", r.Stderr)
	}
	if d := m.Deployment(t, m.Seed.ID); d.RollbackRequested || d.Status != "Completed" {
		t.Errorf("the seed after a declined rollback: %s, rollbackRequested %v", d.Status, d.RollbackRequested)
	}
}

// TestPaging: lists follow the continue tokens page by page and stop at --limit.
func TestPaging(t *testing.T) {
	m, cfg := shared(t)
	conn := Connection{Server: m.URL, Token: m.Token(managertest.Vera), CAFile: m.CAFile}
	c, err := conn.Client()
	if err != nil {
		t.Fatal(err)
	}
	c.PageSize = 1
	all, cont, err := c.ListClusters(t.Context(), client.ClusterFilter{}, client.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(m.Clusters) || cont != "" {
		t.Errorf("pages of one: %d clusters, continue %q; want %d", len(all), cont, len(m.Clusters))
	}
	two, cont, err := c.ListClusters(t.Context(), client.ClusterFilter{}, client.Page{Limit: 2})
	if err != nil || len(two) != 2 || cont == "" {
		t.Errorf("limit 2: %d clusters, continue %q, %v", len(two), cont, err)
	}
	r := mustRun(t, cfg, managertest.Vera, term{}, 0, "cluster", "list", "--limit", "2")
	if n := strings.Count(r.Stdout, "\n"); n != 2 || !strings.Contains(r.Stderr, "Showing the first 2; there are more") {
		t.Errorf("cluster list --limit 2: %d lines, stderr %q", n, r.Stderr)
	}
	r = mustRun(t, cfg, managertest.Vera, term{}, 0, "cluster", "list", "--limit", "0")
	if n := strings.Count(r.Stdout, "\n"); n != len(m.Clusters) || r.Stderr != "" {
		t.Errorf("cluster list --limit 0: %d lines, stderr %q", n, r.Stderr)
	}
}

func TestLoginWithToken(t *testing.T) {
	m := managertest.Shared(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sub", "config.yaml")
	bad := run(t, cfgPath, "", term{}, "login", m.URL, "--certificate-authority", m.CAFile, "--token", "not-a-token")
	if bad.Code != ExitAuth || !strings.Contains(bad.Stderr, "the manager refused the token") {
		t.Errorf("login with a bad token: exit %d, %q", bad.Code, bad.Stderr)
	}
	if _, err := os.Stat(cfgPath); !os.IsNotExist(err) {
		t.Errorf("a refused login wrote the config: %v", err)
	}
	untrusted := run(t, cfgPath, "", term{}, "login", m.URL, "--token", m.Token(managertest.Otto))
	if untrusted.Code != ExitError || !strings.Contains(untrusted.Stderr, "certificate") {
		t.Errorf("login without trusting the CA: exit %d, %q", untrusted.Code, untrusted.Stderr)
	}
	ok := run(t, cfgPath, "", term{Stdin: m.Token(managertest.Otto) + "\n"}, "login", m.URL, "--certificate-authority", m.CAFile, "--token", "-", "--name", "test")
	if ok.Code != 0 || !strings.Contains(ok.Stderr, "as otto (Operator)") {
		t.Fatalf("login: exit %d, %q", ok.Code, ok.Stderr)
	}
	fi, err := os.Stat(cfgPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the config file: %v, %v", fi, err)
	}
	who := mustRun(t, cfgPath, "", term{}, 0, "whoami", "-o", "json")
	var v WhoAmIView
	if err := json.Unmarshal([]byte(who.Stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.Subject != "otto" || !slices.Equal(v.Roles, []string{"Operator"}) || v.Context != "test" || v.Server != m.URL {
		t.Errorf("whoami: %+v", v)
	}
	ctxs := mustRun(t, cfgPath, "", term{TTY: true}, 0, "context")
	if !strings.Contains(ctxs.Stdout, "*        test") || strings.Contains(ctxs.Stdout, m.Token(managertest.Otto)) {
		t.Errorf("context list:\n%s", ctxs.Stdout)
	}
}

func TestContextSwitchAndDelete(t *testing.T) {
	m, cfg := shared(t)
	mustRun(t, cfg, "", term{}, 0, "context", "vera")
	who := mustRun(t, cfg, "", term{}, 0, "whoami")
	if !strings.Contains(who.Stdout, "Subject: vera") {
		t.Errorf("whoami after switching to vera:\n%s", who.Stdout)
	}
	// --context wins over the current context
	who = mustRun(t, cfg, "", term{}, 0, "--context", "bob", "whoami", "-o", "yaml")
	if !strings.Contains(who.Stdout, "subject: bob") {
		t.Errorf("whoami --context bob:\n%s", who.Stdout)
	}
	missing := mustRun(t, cfg, "", term{}, 1, "context", "nobody")
	if !strings.Contains(missing.Stderr, "the contexts are") {
		t.Errorf("switching to a missing context: %q", missing.Stderr)
	}
	mustRun(t, cfg, "", term{}, 0, "context", "delete", "vera")
	gone := mustRun(t, cfg, "", term{}, ExitAuth, "whoami")
	if !strings.Contains(gone.Stderr, "not signed in") {
		t.Errorf("whoami after deleting the current context: %q", gone.Stderr)
	}
	if _, err := os.Stat(m.CAFile); err != nil {
		t.Fatal(err)
	}
}
