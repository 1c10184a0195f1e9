//go:build e2e

package devenv_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/devenv"
	"github.com/slipway-dev/slipway/internal/procid"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/webhookcert"
)

// TestDevEnv_UpDownUpDownInOneDirectory is `make dev-up`, `make dev-down`, `make dev-up`,
// `make dev-down` in one clone, through the devenv command. The second control plane has a new
// webhook CA while the first run's serving certificate is still in the state directory; the second
// up must still apply the samples through the webhooks, serve a certificate the API server trusts,
// and each down must leave no process behind. The operator manager runs in both: with the written
// URL and token it lists the control plane as cluster dev and the operator slipway; the second
// run's manager has a new database and secret, so the first run's token no longer opens it.
// Each run's sample deployment (Direct, health checks on) completes with the operator Healthy,
// every part checked, and the status view follows it: the second run submits it afresh. Version
// 0.3.0 of the sample chart, published after each up, is found by the manager and shown. The
// cockpit: ui.url signs chromium in to the web UI's fleet once, slipway.yaml points the CLI at
// the manager (checkCockpit).
func TestDevEnv_UpDownUpDownInOneDirectory(t *testing.T) {
	dir := t.TempDir()
	devenvBin, operatorBin, managerBin := buildBinary(t, dir, "devenv"), buildBinary(t, dir, "operator"), buildBinary(t, dir, "manager")
	slipwayBin := buildBinary(t, dir, "slipway")
	state := filepath.Join(dir, "dev")
	addrs := freeAddrs(t, 6)
	args := []string{"--dir=" + state, "--operator=" + operatorBin, "--manager=" + managerBin, "--registry-addr=" + addrs[0],
		"--git-addr=" + addrs[1], "--probe-addr=" + addrs[2], "--metrics-addr=" + addrs[3],
		"--manager-addr=" + addrs[4], "--manager-metrics-addr=" + addrs[5],
		"--webhook-port=" + strconv.Itoa(webhookPort(t)),
		// The operator from its image on the real node, as make dev runs it as root.
		"--real-node=true",
		// 0.3.0 of the sample chart is published 10 s after each up, not a minute.
		"--later-version-delay=10s"}
	devenv := func(cmd string) (string, error) {
		out, err := exec.Command(devenvBin, append([]string{cmd}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := devenv("down"); err != nil {
			t.Errorf("down at cleanup: %v\n%s", err, out)
		}
	})

	var cas, tokens []string
	for run := 1; run <= 2; run++ {
		out, err := devenv("up")
		if err != nil {
			t.Fatalf("up #%d: %v\n%s\n--- end of operator.log:\n%s\n--- end of manager.log:\n%s", run, err, out,
				lastLines(filepath.Join(state, "logs", "operator.log"), 30), lastLines(filepath.Join(state, "logs", "manager.log"), 30))
		}
		m := checkManager(t, state)
		printsCurl(t, out, state)
		sample := checkSampleDeployment(t, m, out, state)
		checkLaterVersion(t, m, out, state)
		checkCockpit(t, m, out, state, slipwayBin)
		checkCLI(t, state, slipwayBin, sample)
		for _, prev := range tokens {
			if code, body := m.get(t, "/api/v1/clusters", prev); code != http.StatusUnauthorized {
				t.Errorf("up #%d: the previous run's token = %d, want 401 (a fresh secret): %s", run, code, body)
			}
		}
		tokens = append(tokens, m.token)
		c := kubeClient(t, filepath.Join(state, "kubeconfig"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		checkOperatorPodRolled(ctx, t, c)
		// The status view says which pods are real.
		if log := readStateFile(t, state, "devenv.log"); !regexp.MustCompile(`(?m)^Pod +slipway-system` +
			` +slipway-operator-\S+ +Running +real container on real-node, ready, 10\.`).MatchString(log) {
			t.Errorf("up #%d: the status view does not show the operator's pod as a real container:\n%s", run, lastLines(filepath.Join(state, "devenv.log"), 30))
		}
		// The API server calls both webhooks: the mutating one on a dry-run create, the validating
		// one refuses an image without a tag.
		ok := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "webapp-demo"}, Spec: webappv1.WebAppSpec{Image: "nginx:1.27"}}
		if err := c.Create(ctx, ok, client.DryRunAll); err != nil {
			t.Errorf("up #%d: dry-run create of a valid WebApp: %v", run, err)
		}
		bad := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "no-tag", Namespace: "webapp-demo"}, Spec: webappv1.WebAppSpec{Image: "nginx"}}
		if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "tag or a digest") {
			t.Errorf("up #%d: creating a WebApp without an image tag: %v, want the webhook's refusal", run, err)
		}
		if err := servedIsTrusted(ctx, c); err != nil {
			t.Errorf("up #%d: %v", run, err)
		}
		var secret corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: controlplane.OperatorNamespace, Name: webhookcert.DefaultSecretName}, &secret); err != nil {
			t.Fatal(err)
		}
		cas = append(cas, string(secret.Data[webhookcert.KeyCA]))
		cancel()

		serve := openServe(t, state)
		if out, err := devenv("down"); err != nil {
			t.Fatalf("down #%d: %v\n%s", run, err, out)
		}
		if serve.GroupAlive() {
			t.Fatalf("down #%d: processes of group %d are still running", run, serve.ID.PID)
		}
	}
	if cas[0] == cas[1] {
		t.Fatal("both runs had the same webhook CA: the second control plane did not start from scratch")
	}
}

// servedIsTrusted dials the webhook server the mutating configuration points at and verifies its
// certificate against that webhook's caBundle, as the API server does.
func servedIsTrusted(ctx context.Context, c client.Client) error {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: webhookcert.MutatingWebhookConfiguration}, m); err != nil {
		return err
	}
	cc := m.Webhooks[0].ClientConfig
	addr, name, err := webhookAddr(ctx, c, cc)
	if err != nil {
		return err
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // verified below
	if err != nil {
		return err
	}
	defer conn.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cc.CABundle)
	_, err = conn.ConnectionState().PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: name})
	return err
}

// webhookAddr returns where the API server calls a webhook and the name its certificate must
// hold: the URL's host, or (a Service, the operator's pod on the real node) the Service's first
// ready endpoint and the Service's DNS name.
func webhookAddr(ctx context.Context, c client.Client, cc admissionregistrationv1.WebhookClientConfig) (string, string, error) {
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return "", "", err
		}
		return u.Host, u.Hostname(), nil
	}
	s := cc.Service
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(s.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: s.Name}); err != nil {
		return "", "", err
	}
	for _, sl := range slices.Items {
		for _, e := range sl.Endpoints {
			if len(e.Addresses) > 0 && len(sl.Ports) > 0 && sl.Ports[0].Port != nil && ptr.Deref(e.Conditions.Ready, false) {
				return net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*sl.Ports[0].Port))), s.Name + "." + s.Namespace + ".svc", nil
			}
		}
	}
	return "", "", fmt.Errorf("webhook Service %s/%s has no ready endpoint", s.Namespace, s.Name)
}

func buildBinary(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, "../../cmd/"+name)
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: the operator runs in its image on the real node
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

func kubeClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	ctrl.SetLogger(logr.Discard())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// openServe opens the serve process the pid file identifies, through a pidfd: its group is
// checked through it, never through a number that may have passed to another process.
func openServe(t *testing.T, state string) *procid.Process {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "devenv.pid"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := procid.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	p, err := procid.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// checkOperatorPodRolled checks that the upgrades (the sample deployment's, then the CLI's) rolled
// the operator's real pod: one pod of the release is left, of the chart version deployed last
// (the chart label is on the pod template), Ready on the real node.
func checkOperatorPodRolled(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	chart := devenv.SampleOperator + "-" + devenv.SampleLaterVersion
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(devenv.SampleOperatorNamespace), client.MatchingLabels{"app.kubernetes.io/instance": devenv.SampleOperator}); err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		t.Fatalf("%d live operator pods, want 1 after the rollouts: %+v", len(live), live)
	}
	p := live[0]
	ready := false
	for _, cond := range p.Status.Conditions {
		ready = ready || cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue
	}
	if p.Labels["helm.sh/chart"] != chart || p.Spec.NodeName != "real-node" || !ready {
		t.Errorf("operator pod %s: chart %q on %q, ready %v; want %s Ready on the real node", p.Name, p.Labels["helm.sh/chart"], p.Spec.NodeName, ready, chart)
	}
}
