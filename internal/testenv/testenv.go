// Package testenv is the test harness every controller test uses: a real control plane with all
// project CRDs installed.
//
//   - Light mode (etcd + kube-apiserver) for controller tests.
//   - Full mode adds kube-controller-manager, kube-scheduler and kwok, so Deployments become
//     available, Jobs complete, garbage collection and namespace deletion work.
//
// To make a Job's pods fail, put the label controlplane.FailLabel ("slipway.dev/kwok-fail": "true")
// on the Job's pod template; to keep them running for a while, the annotation
// controlplane.DurationAnnotation ("slipway.dev/kwok-duration": "30s"). WithPodFailure and
// WithPodDuration do that for a Job.
//
// Every process is stopped when the test (or TestMain) ends, even on failure. Component logs are
// removed after a passing run and kept after a failing one; the path and the last lines of each
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) are printed.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/scheme"
)

// Mode re-exports the control-plane modes for test code.
const (
	Light = controlplane.Light
	Full  = controlplane.Full
)

// Env is a running control plane for a test or a test package.
type Env = controlplane.ControlPlane

// New starts a control plane for one test and stops it in t.Cleanup.
func New(t testing.TB, mode controlplane.Mode) *Env {
	t.Helper()
	return newEnv(t, mode, nil)
}

// NewWithRealNode starts a full control plane with its real node (controlplane.Options.RealNode)
// for one test and stops both in t.Cleanup. Unlike RealNode on a shared env, its kube-apiserver
// serves on the node's gateway with ServiceAccount admission (pods reach it with their token),
// calls webhooks at their Service's endpoints, and sends every pod of a namespace annotated with
// controlplane.RealNodeNamespaceAnnotations() to the node. Needs root and hack/deps.sh's packages.
func NewWithRealNode(t testing.TB, opts controlplane.RealNodeOptions) *Env {
	t.Helper()
	return newEnv(t, controlplane.Full, &opts)
}

func newEnv(t testing.TB, mode controlplane.Mode, realNode *controlplane.RealNodeOptions) *Env {
	t.Helper()
	logDir := logDir(t.Name())
	env, err := start(mode, logDir, realNode)
	if err != nil {
		t.Fatalf("starting %s control plane: %v (logs in %s)", mode, err, logDir)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
		if t.Failed() {
			t.Logf("control-plane logs kept in %s\n%s", logDir, controlplane.LogTails(logDir, logTailLines))
			return
		}
		_ = os.RemoveAll(logDir)
	})
	return env
}

// Main starts one control plane for a whole test package, runs the tests with it and stops it.
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e }) }
func Main(m *testing.M, mode controlplane.Mode, setup func(*Env)) {
	os.Exit(run(m, mode, setup))
}

func run(m *testing.M, mode controlplane.Mode, setup func(*Env)) int {
	dir := logDir(filepath.Base(mustWd()))
	env, err := start(mode, dir, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting %s control plane: %v (logs in %s)\n", mode, err, dir)
		return 1
	}
	setup(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		code = 1
	}
	finish(dir, code != 0)
	return code
}

func start(mode controlplane.Mode, logDir string, realNode *controlplane.RealNodeOptions) (*Env, error) {
	// Controller logs go to stderr, which go test shows for failing packages and with -v.
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapcore.InfoLevel)))
	crds, err := config.CRDs()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return controlplane.Start(ctx, controlplane.Options{
		Mode:     mode,
		LogDir:   logDir,
		CRDs:     crds,
		Scheme:   scheme.New(),
		RealNode: realNode,
	})
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func logDir(name string) string {
	base := os.Getenv("SLIPWAY_TEST_LOGS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "slipway-test-logs")
	}
	_ = os.MkdirAll(base, 0o755)
	dir, err := os.MkdirTemp(base, unsafeChars.ReplaceAllString(name, "_")+"-")
	if err != nil {
		return filepath.Join(base, unsafeChars.ReplaceAllString(name, "_"))
	}
	return dir
}

// logTailLines is how many of each component log's last lines a failed test prints.
const logTailLines = 40

// finish removes the logs of a passing run, and keeps those of a failing one, printing their
// path and last lines.
func finish(dir string, failed bool) {
	if failed {
		fmt.Fprintf(os.Stderr, "control-plane logs kept in %s\n%s", dir, controlplane.LogTails(dir, logTailLines))
		return
	}
	_ = os.RemoveAll(dir)
}

func mustWd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "pkg"
	}
	return wd
}

// WithPodFailure makes the Job's pods fail under kwok (exit code 1).
func WithPodFailure(job *batchv1.Job) *batchv1.Job {
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	job.Spec.Template.Labels[controlplane.FailLabel] = "true"
	return job
}

// WithPodDuration keeps the Job's pods running for d before they end under kwok.
func WithPodDuration(job *batchv1.Job, d time.Duration) *batchv1.Job {
	if job.Spec.Template.Annotations == nil {
		job.Spec.Template.Annotations = map[string]string{}
	}
	job.Spec.Template.Annotations[controlplane.DurationAnnotation] = d.String()
	return job
}

// RealNode starts a real node (containerd, runc, bridge CNI and a kubelet:
// internal/controlplane/realnode.go) on a full env and stops it in t.Cleanup. Only pods with
// controlplane.RealNodeTolerations() (and the node selector controlplane.RealNodeLabel=true) land
// on it; kwok's nodes keep the rest. Its images: controlplane.HTTPTestImage, and what
// RealNode.ImportImages imports. Needs root and the packages hack/deps.sh installs.
func RealNode(t testing.TB, env *Env, name string) *controlplane.RealNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := env.StartRealNode(ctx, controlplane.RealNodeOptions{Name: name})
	if err != nil {
		t.Fatalf("starting real node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stopping real node %s: %v", name, err)
		}
	})
	return n
}
