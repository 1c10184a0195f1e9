//go:build e2e

package realnodetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/ociimage"
	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// operatorImage is the test operator's image on the real node (imported, never pulled).
const operatorImage = "slipway.local/test/widget-operator:1"

// world is the package's one control plane with its real node and the operator's image in it,
// started by the first test that needs it and stopped by TestMain.
type world struct {
	cp         *controlplane.ControlPlane
	node       *controlplane.RealNode
	kubeconfig []byte // an admin kubeconfig for the manager to register the cluster with
	logDir     string
	// started is how long the build, the start and the import took.
	started time.Duration
}

// The package's clusters: each a control plane with a real node of its own, started by the first
// test that needs it and stopped by TestMain.
var (
	worldOnce sync.Once
	shared    *world
	worldErr  error
	// second is another cluster, for the strategies that go from cluster to cluster.
	secondOnce sync.Once
	second     *world
	secondErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, w := range []*world{shared, second} {
		if w == nil {
			continue
		}
		if err := w.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
			code = max(code, 1)
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "component logs: %s\n", w.logDir)
		} else {
			_ = os.RemoveAll(w.logDir)
		}
	}
	os.Exit(code)
}

// realNode returns the package's control plane with its real node, starting it on first use.
func realNode(t *testing.T) *world {
	t.Helper()
	worldOnce.Do(func() { shared, worldErr = startWorld("real-node") })
	if worldErr != nil {
		t.Fatalf("the control plane with a real node: %v", worldErr)
	}
	return shared
}

// secondCluster returns another control plane with a real node of its own (real-node-b), starting
// it on first use.
func secondCluster(t *testing.T) *world {
	t.Helper()
	secondOnce.Do(func() { second, secondErr = startWorld("real-node-b") })
	if secondErr != nil {
		t.Fatalf("the second control plane with a real node: %v", secondErr)
	}
	return second
}

func startWorld(node string) (*world, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	img, err := buildOperatorImage(ctx)
	if err != nil {
		return nil, err
	}
	logDir, err := os.MkdirTemp("", "slipway-realnodetest-")
	if err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Mode: controlplane.Full, LogDir: logDir, RealNode: &controlplane.RealNodeOptions{Name: node}})
	if err != nil {
		return nil, fmt.Errorf("%w (logs in %s)", err, logDir)
	}
	w := &world{cp: cp, node: cp.RealNodes()[0], logDir: logDir}
	fail := func(err error) (*world, error) {
		_ = cp.Stop()
		return nil, fmt.Errorf("%w (logs in %s)", err, logDir)
	}
	if err := w.node.ImportImages(ctx, operatorImage, []v1.Image{img}); err != nil {
		return fail(err)
	}
	kc, err := cp.WriteKubeconfig(filepath.Join(logDir, "manager.kubeconfig"), "slipway-manager")
	if err != nil {
		return fail(err)
	}
	if w.kubeconfig, err = os.ReadFile(kc); err != nil {
		return fail(err)
	}
	w.started = time.Since(start)
	return w, nil
}

// buildOperatorImage builds testdata/operator as a static binary into an image of
// internal/ociimage (non-root, no shell), as the operator's own image is built.
func buildOperatorImage(ctx context.Context) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "slipway-operator-bin-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "operator")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./testdata/operator")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the test operator: %w\n%s", err, out)
	}
	return ociimage.Build(ociimage.Spec{Binary: bin, Path: "/operator",
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Created: time.Unix(0, 0)})
}

// env is what every chart version's values carry: the image, the API server at the node's
// gateway, and a webhook certificate for the webhook Service's DNS name in namespace.
func (w *world) env(t *testing.T, release, namespace string) chartEnv {
	t.Helper()
	host, port, err := net.SplitHostPort(strings.TrimPrefix(w.cp.Config.Host, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	if host != w.node.Gateway.String() {
		t.Fatalf("kube-apiserver serves at %s, want the real node's gateway %s", w.cp.Config.Host, w.node.Gateway)
	}
	// A certificate that is its own CA: the webhook's caBundle is the certificate itself.
	name := fmt.Sprintf("%s-%s-webhook.%s.svc", release, chartName, namespace)
	// BlueGreen installs green beside blue: release <release>-green in <namespace>-green.
	green := fmt.Sprintf("%s-green-%s-webhook.%s-green.svc", release, chartName, namespace)
	cert, key, err := selfsigned.Generate(time.Now(), name, []string{name, green}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return chartEnv{Image: operatorImage, APIHost: host, APIPort: port, CACert: cert, Cert: cert, Key: key, FailAfter: failAfter.String()}
}
