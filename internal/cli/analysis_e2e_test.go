//go:build e2e

package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis/promtest"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// Analyses from the CLI against a real manager and a real Prometheus: an analysis template
// stored from a YAML file, listed, shown; the cluster's Prometheus set (checked by the manager
// against Prometheus), shown without secrets; a deploy --analysis that completes after the
// analysis' measurements, which `deployment get` prints; the template and the Prometheus
// removed.
func TestAnalysisCommands(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{BasicAuth: map[string]string{"slipway": "pr0m-cli"}})
	m := managertest.Start(t, managertest.Options{Clusters: []managertest.Cluster{{Name: "dev-1", Environment: "Dev"}}, NoSeed: true})
	dir := t.TempDir()
	cfg := writeConfig(t, m, dir)
	tmpl := filepath.Join(dir, "zero.yaml")
	if err := os.WriteFile(tmpl, []byte(`name: zero
query: vector({{floor}})
successCondition: {max: 0.5}
interval: PT1S
count: 2
args: [{name: floor, value: "1"}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("pr0m-cli\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, cfg, managertest.Alice, term{}, 0, "analysis-template", "create", "-f", tmpl)
	list := mustRun(t, cfg, managertest.Vera, term{TTY: true}, 0, "analysis-template", "list")
	matchLines(t, "analysis-template list", list.Stdout, `^zero +≤ 0\.5 +PT1S +2 +vector\(\{\{floor\}\}\)$`)
	get := mustRun(t, cfg, managertest.Vera, term{TTY: true}, 0, "analysis-template", "get", "zero")
	matchLines(t, "analysis-template get", get.Stdout, `^Args: +floor=1$`, `^Condition: +≤ 0\.5$`)

	bad := mustRun(t, cfg, managertest.Alice, term{}, 1, "cluster", "prometheus", "set", "dev-1", "--url", prom.URL, "--username", "slipway")
	if !strings.Contains(bad.Stderr, "basic: give a username and a password") {
		t.Errorf("set without the password: %q", bad.Stderr)
	}
	mustRun(t, cfg, managertest.Alice, term{}, 0, "cluster", "prometheus", "set", "dev-1", "--url", prom.URL, "--username", "slipway", "--password-file", pw)
	shown := mustRun(t, cfg, managertest.Vera, term{TTY: true}, 0, "cluster", "prometheus", "get", "dev-1")
	matchLines(t, "cluster prometheus get", shown.Stdout, `^Auth: +basic$`, `^CA: +system roots$`)
	if strings.Contains(shown.Stdout, "pr0m-cli") {
		t.Fatal("the password is shown")
	}

	dep := mustRun(t, cfg, managertest.Otto, term{}, 0, "deploy", m.Operator, managertest.SeedVersion, "--clusters", "dev-1",
		"--strategy", "rolling", "--validation-period", "1s", "--analysis", "zero:floor=0", "-o", "json")
	var d api.Deployment
	if err := json.Unmarshal([]byte(dep.Stdout), &d); err != nil {
		t.Fatalf("deploy -o json: %v: %s", err, dep.Stdout)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for d.Status != "Completed" && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		m.Must(t, http.MethodGet, "/api/v1/deployments/"+d.ID, managertest.Alice, nil, http.StatusOK).JSON(t, &d)
		if d.Status == "RolledBack" || d.Status == "Failed" {
			t.Fatalf("deployment %s: %s", d.Status, d.Reason)
		}
	}
	out := mustRun(t, cfg, managertest.Vera, term{TTY: true}, 0, "deployment", "get", d.ID)
	matchLines(t, "deployment get", out.Stdout, `^zero +dev-1 +1 +Successful +2/2 +0 +Successful +analysis zero passed: 2 measurements, 0 failed, 0 inconclusive$`)

	mustRun(t, cfg, managertest.Alice, term{}, 0, "cluster", "prometheus", "delete", "dev-1", "--yes")
	mustRun(t, cfg, managertest.Alice, term{}, 0, "analysis-template", "delete", "zero", "--yes")
	gone := mustRun(t, cfg, managertest.Vera, term{}, 1, "analysis-template", "get", "zero")
	if !strings.Contains(gone.Stderr, `analysis template "zero" not found`) {
		t.Errorf("a deleted template: %q", gone.Stderr)
	}
}
