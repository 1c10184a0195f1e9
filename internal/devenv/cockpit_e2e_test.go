//go:build e2e

package devenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/chromium"
	"github.com/slipway-dev/slipway/internal/devenv"
)

// checkCockpit is the acceptance for make dev's cockpit: ui.url, opened in headless
// chromium, signs in as the dev Admin and shows the fleet with the dev cluster and the sample
// operator, and leaves the address bar at once; the link then is used (a second exchange is
// refused); slipway.yaml points the built CLI at the manager (deployment list -o json lists the
// sample deployment); and up printed the UI's URL and a command that watches the sample
// deployment.
func checkCockpit(t *testing.T, m managerAccess, out, state, slipway string) {
	t.Helper()
	link := strings.TrimSpace(readStateFile(t, state, devenv.UIURLFile))
	for _, f := range []string{devenv.UIURLFile, devenv.CLIConfigFile} {
		if info, err := os.Stat(filepath.Join(state, f)); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600 (it holds a credential)", f, err, info.Mode().Perm())
		}
	}
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(m.url) + `/login#ticket=[\w.-]+$`).MatchString(link) {
		t.Fatalf("%s = %q, want %s/login#ticket=…", devenv.UIURLFile, link, m.url)
	}
	for _, want := range []string{"web UI:     " + m.url + "/", "SLIPWAY_CONFIG=" + filepath.Join(state, devenv.CLIConfigFile)} {
		if !strings.Contains(out, want) {
			t.Errorf("up's output does not say %q:\n%s", want, out)
		}
	}
	openLinkInChromium(t, state, link)
	ticket := link[strings.Index(link, "#ticket=")+len("#ticket="):]
	if code, body := m.post(t, "/api/v1/session", `{"ticket":"`+ticket+`"}`); code != http.StatusUnauthorized {
		t.Errorf("the link exchanged again after the browser used it = %d, want 401: %s", code, body)
	}

	list := runCLI(t, state, slipway, "deployment", "list", "-o", "json")
	var deployments []struct{ ID, Operator string }
	if err := json.Unmarshal([]byte(list), &deployments); err != nil || len(deployments) == 0 ||
		deployments[len(deployments)-1].Operator != devenv.SampleOperator {
		t.Errorf("slipway deployment list -o json: %v; want the sample deployment of %s:\n%s", err, devenv.SampleOperator, list)
	}
}

// openLinkInChromium opens the one-time link in headless chromium (trusting the dev manager's
// certificate alone) and waits for the fleet's cell of the sample operator on the dev cluster;
// the ticket must have left the address by then.
func openLinkInChromium(t *testing.T, state, link string) {
	t.Helper()
	spki, err := chromium.SPKIHash([]byte(readStateFile(t, state, devenv.ManagerCAFile)))
	if err != nil {
		t.Fatal(err)
	}
	browser, stop, err := chromium.Start(chromium.Options{Width: 1280, Height: 900, SPKIHash: spki})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()
	cell := `[data-testid="fleet-cell"][data-operator="` + devenv.SampleOperator + `"][data-cluster="` + devenv.DevCluster + `"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(cell))); err != nil {
		t.Fatalf("opening %s in chromium: the fleet's cell of %s on %s: %v", devenv.UIURLFile, devenv.SampleOperator, devenv.DevCluster, err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, "ticket") {
		t.Errorf("the address still holds the ticket after sign-in: %s", loc)
	}
}

// checkCLI is the acceptance for the CLI against make dev: the banner's watch command
// follows the sample deployment (Completed by now) and exits 0; the in-cluster verbs list the
// sample WerfBundle through KUBECONFIG; and `slipway deploy … --watch` of the version published
// after start goes to Completed, exit 0 (Dev asks no approval in make dev; the operator's
// default values are the sample release's).
func checkCLI(t *testing.T, state, slipway, sample string) {
	t.Helper()
	if out := runCLI(t, state, slipway, "deployment", "watch", sample, "--progress", "plain"); !strings.Contains(out, "Completed") {
		t.Errorf("slipway deployment watch %s does not end Completed:\n%s", sample, out)
	}
	bundles := runCLI(t, state, slipway, "get", "werfbundles", "-A")
	if !regexp.MustCompile(`(?m)^werf-demo\s+hello\s`).MatchString(bundles) {
		t.Errorf("slipway get werfbundles -A does not list werf-demo/hello:\n%s", bundles)
	}
	out := runCLI(t, state, slipway, "deploy", devenv.SampleOperator, devenv.SampleLaterVersion, "--clusters", devenv.DevCluster,
		"--strategy", "direct", "--watch", "--progress", "plain", "--timeout", "4m")
	if !strings.Contains(out, "Completed") {
		t.Errorf("slipway deploy %s %s --watch does not end Completed:\n%s", devenv.SampleOperator, devenv.SampleLaterVersion, out)
	}
}

// runCLI runs the built slipway with the dev environment's CLI config and returns its stdout;
// a non-zero exit fails the test with stderr.
func runCLI(t *testing.T, state, slipway string, args ...string) string {
	t.Helper()
	cmd := exec.Command(slipway, args...)
	cmd.Env = append(os.Environ(), "SLIPWAY_CONFIG="+filepath.Join(state, devenv.CLIConfigFile),
		"KUBECONFIG="+filepath.Join(state, "kubeconfig"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("slipway %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}
