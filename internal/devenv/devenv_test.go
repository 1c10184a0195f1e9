//go:build e2e

package devenv_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/devenv"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestDevEnv_StartsEverythingAndLeavesNothingBehind is what `make dev-up` and `make dev-down` do:
// with the real node (it needs root), both nodes are Ready through the written kubeconfig, the
// operator runs from its image in the sample release's pod on the real node and answers /healthz
// at the pod's address, its webhooks answer through their Service, the samples are reconciled by
// it (the registry and the git server reached at the node's gateway), the registry serves /v2/,
// and Stop leaves no child process.
func TestDevEnv_StartsEverythingAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "operator")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/operator")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: it runs in the operator's image
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	var out bytes.Buffer
	opts := devenv.Options{
		Dir:            filepath.Join(dir, "dev"),
		RegistryAddr:   testenv.FreeAddr(t),
		GitAddr:        testenv.FreeAddr(t),
		ProbeAddr:      testenv.FreeAddr(t),
		MetricsAddr:    testenv.FreeAddr(t),
		WebhookPort:    webhookPort(t),
		OperatorBinary: bin,
		RealNode:       true,
		Out:            &out,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := devenv.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out.String())
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = env.Stop()
		}
	}()

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(opts.Dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	real, realNode := 0, ""
	for _, n := range nodes.Items {
		if !ready(n) {
			t.Errorf("node %s is not Ready", n.Name)
		}
		if n.Labels[controlplane.RealNodeLabel] == "true" {
			real, realNode = real+1, n.Name
		}
	}
	if len(nodes.Items) != 2 || real != 1 {
		t.Fatalf("want kwok's node and one real node, got %+v", nodes.Items)
	}
	// The operator runs from its image, installed by its chart, in a pod on the real node.
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(devenv.SampleOperatorNamespace), client.MatchingLabels{"app.kubernetes.io/instance": devenv.SampleOperator}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Spec.NodeName != realNode || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("want the operator's one pod on the real node %s, got %+v", realNode, pods.Items)
	}
	operatorHealth := "http://" + net.JoinHostPort(pods.Items[0].Status.PodIP, "8081") + "/healthz"
	if !strings.Contains(out.String(), pods.Items[0].Name) || !strings.Contains(out.String(), operatorHealth) {
		t.Errorf("the banner does not name the operator's pod %s and %s:\n%s", pods.Items[0].Name, operatorHealth, out.String())
	}
	for _, url := range []string{operatorHealth, "http://" + opts.RegistryAddr + "/v2/"} {
		if code := get(url); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", url, code)
		}
	}
	// The webhooks are live: an image without a tag is refused by the validating webhook, and the
	// sample WebApp reaches Ready on kwok's pods.
	bad := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "no-tag", Namespace: "webapp-demo"},
		Spec:       webappv1.WebAppSpec{Image: "nginx"},
	}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "admission webhook") || !strings.Contains(err.Error(), "tag or a digest") {
		t.Errorf("creating a WebApp without an image tag: %v, want the webhook's refusal", err)
	}
	testenv.Eventually(ctx, t, "the sample WebApp is Ready", func() (bool, error) {
		var list webappv1.WebAppList
		if err := c.List(ctx, &list, client.InNamespace("webapp-demo")); err != nil {
			return false, err
		}
		return len(list.Items) == 1 && list.Items[0].Status.Phase == webappv1.PhaseReady, nil
	})
	// The Catalyst samples: the pull-request Environment is deployed from the served repository
	// and Ready with its URL.
	testenv.Eventually(ctx, t, "the sample Environment is Ready with a URL", func() (bool, error) {
		var env catalystv1.Environment
		if err := c.Get(ctx, client.ObjectKey{Namespace: "my-team-my-project", Name: "pr-123"}, &env); err != nil {
			return false, err
		}
		return env.Status.Phase == catalystv1.PhaseReady && env.Status.URL != "", fmt.Errorf("phase %q, conditions %+v", env.Status.Phase, env.Status.Conditions)
	})
	// ... at Pod Security restricted, as a production install enforces it: the sample
	// application's pods meet it.
	var envNS corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: "my-team-my-project-pr-123"}, &envNS); err != nil {
		t.Fatal(err)
	}
	if level := envNS.Labels["pod-security.kubernetes.io/enforce"]; level != "restricted" {
		t.Errorf("the sample environment's namespace enforces Pod Security %q, want restricted", level)
	}
	checkSamplesServeOnTheRealNode(ctx, t, env, c)
	if _, err := os.Stat(filepath.Join(opts.Dir, "ready")); err != nil {
		t.Errorf("no ready marker: %v", err)
	}
	if !strings.Contains(out.String(), "kwok simulates the others") || strings.Contains(out.String(), "Pods are simulated by kwok") {
		t.Errorf("the banner does not say which pods are real:\n%s", out.String())
	}

	t.Logf("devenv's output:\n%s", out.String())
	node := env.RealNode()
	if err := env.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped = true
	if kids := children(t); len(kids) > 0 {
		t.Errorf("processes left behind: %v", kids)
	}
	// The operator's pod went with the real node: its bridge and directory are gone. (Its address
	// may answer again at once: another test's node may take the same subnet.)
	if out, err := exec.Command("ip", "link", "show", node.Bridge).CombinedOutput(); err == nil {
		t.Errorf("the real node's bridge %s is still there after Stop:\n%s", node.Bridge, out)
	}
	if _, err := os.Stat(node.Dir); !os.IsNotExist(err) {
		t.Errorf("the real node's directory %s is still there after Stop: %v", node.Dir, err)
	}
}

func webhookPort(t *testing.T) int {
	_, port, err := net.SplitHostPort(testenv.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return p
}

func ready(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func get(url string) int {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// children lists the live child processes of this test binary, from /proc.
func children(t *testing.T) []string {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[i+1:])
		if len(fields) > 2 && fields[1] == self && fields[0] != "Z" {
			kids = append(kids, e.Name()+" "+s[strings.IndexByte(s, '(')+1:i])
		}
	}
	return kids
}
