//go:build e2e

package devenv_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/devenv"
)

// TestDevEnv_HeldDefaultPortsAreMovedAndPrinted is `make dev-up` while other programs hold every
// default port of the dev environment on 127.0.0.1 (registry, git server, operator probes,
// metrics and webhooks, the manager's API and metrics): each moves to a free port, the move is
// printed with the variable that fixes it, and everything works on the new ports.
func TestDevEnv_HeldDefaultPortsAreMovedAndPrinted(t *testing.T) {
	defaults := map[string]string{
		devenv.EnvRegistryAddr:       devenv.DefaultRegistryAddr,
		devenv.EnvGitAddr:            devenv.DefaultGitAddr,
		devenv.EnvProbeAddr:          devenv.DefaultProbeAddr,
		devenv.EnvMetricsAddr:        devenv.DefaultMetricsAddr,
		devenv.EnvWebhookPort:        "127.0.0.1:" + strconv.Itoa(devenv.DefaultWebhookPort),
		devenv.EnvManagerAddr:        devenv.DefaultManagerAddr,
		devenv.EnvManagerMetricsAddr: devenv.DefaultManagerMetricsAddr,
	}
	for _, addr := range defaults {
		holdPort(t, addr)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := devenv.Start(ctx, devenv.Options{Dir: filepath.Join(dir, "dev"), OperatorBinary: buildBinary(t, dir, "operator"),
		ManagerBinary: buildBinary(t, dir, "manager"), Out: &out})
	if err != nil {
		t.Fatalf("start with the default ports held: %v\n%s", err, out.String())
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()

	opts := env.Options()
	got := map[string]string{
		devenv.EnvRegistryAddr:       opts.RegistryAddr,
		devenv.EnvGitAddr:            opts.GitAddr,
		devenv.EnvProbeAddr:          opts.ProbeAddr,
		devenv.EnvMetricsAddr:        opts.MetricsAddr,
		devenv.EnvWebhookPort:        "127.0.0.1:" + strconv.Itoa(opts.WebhookPort),
		devenv.EnvManagerAddr:        opts.ManagerAddr,
		devenv.EnvManagerMetricsAddr: opts.ManagerMetricsAddr,
	}
	banner, ok := strings.CutPrefix(out.String()[strings.Index(out.String(), "\nReady in")+1:], "Ready in")
	if !ok {
		t.Fatalf("no ready banner:\n%s", out.String())
	}
	for env, def := range defaults {
		if got[env] == def {
			t.Errorf("%s: still %s, which is held", env, def)
		}
		port := def[strings.LastIndex(def, ":"):]
		if !strings.Contains(banner, port+" is in use") || !strings.Contains(banner, env) {
			t.Errorf("the ready banner does not say %s moved and that %s fixes it:\n%s", def, env, banner)
		}
	}
	for _, url := range []string{
		"http://" + opts.ProbeAddr + "/healthz",
		"http://" + opts.MetricsAddr + "/metrics",
		"http://" + opts.RegistryAddr + "/v2/",
		"http://" + opts.GitAddr + "/org/app/info/refs?service=git-upload-pack",
		"http://" + opts.ManagerMetricsAddr + "/metrics",
	} {
		if code := get(url); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", url, code)
		}
	}
	// The manager answers on its moved port, at the URL written for it, with the control plane and
	// the sample operator registered.
	m := checkManager(t, opts.Dir)
	if want := "https://" + opts.ManagerAddr; m.url != want {
		t.Errorf("%s = %q, want %q", devenv.ManagerURLFile, m.url, want)
	}
	// The API server calls the webhooks on the moved port.
	c := kubeClient(t, filepath.Join(opts.Dir, "kubeconfig"))
	bad := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "no-tag", Namespace: "webapp-demo"}, Spec: webappv1.WebAppSpec{Image: "nginx"}}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "tag or a digest") {
		t.Errorf("creating a WebApp without an image tag: %v, want the webhook's refusal", err)
	}
}

// TestDevEnvCommand_FixedPortInUseNamesItsVariable is `SLIPWAY_DEV_REGISTRY_ADDR=<a held address>
// make dev-up` (and the same for the manager's address): the command fails before starting
// anything, naming the address, the variable and the flag. (The operator's own addresses are
// checked only without the real node, where it runs on the host: TestPorts_*.)
func TestDevEnvCommand_FixedPortInUseNamesItsVariable(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir, "devenv")
	for _, tt := range []struct{ env, flag, endpoint string }{
		{devenv.EnvRegistryAddr, "--registry-addr", "OCI registry"},
		{devenv.EnvManagerAddr, "--manager-addr", "manager API"},
	} {
		t.Run(tt.env, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cmd := exec.Command(bin, "up", "--dir="+filepath.Join(t.TempDir(), "dev"))
			cmd.Env = append(cmd.Environ(), tt.env+"="+l.Addr().String())
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("up succeeded with %s held:\n%s", tt.endpoint, out)
			}
			for _, want := range []string{l.Addr().String(), tt.env, tt.flag, tt.endpoint} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the output does not name %q:\n%s", want, out)
				}
			}
			if strings.Contains(string(out), "Starting the control plane") {
				t.Errorf("the control plane was started before the port check:\n%s", out)
			}
		})
	}
}

// holdPort listens on addr until the test ends; an address another program holds already is held
// just the same.
func holdPort(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		c, derr := net.Dial("tcp", addr)
		if derr != nil {
			t.Fatalf("%s is neither free nor held: %v", addr, err)
		}
		_ = c.Close()
		return
	}
	t.Cleanup(func() { _ = l.Close() })
}
