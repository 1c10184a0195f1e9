// Package devenv runs the whole product on one machine with no cluster and no container engine:
// the full local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
// with a fake node) and, by default, a real node (containerd and a kubelet, realnode.go), a local
// OCI registry, the CRDs and RBAC, the operator as a process under its own RBAC-limited identity,
// the samples from config/samples, and the operator manager on embedded SQLite with the control
// plane and a sample operator registered. kwok simulates every pod that is not on the real node.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/scheme"
)

// Options configure the dev environment.
type Options struct {
	// Dir is the state directory (kubeconfig, logs, pid file): .slipway/dev.
	Dir string
	// The addresses below are chosen at start when empty (zero): the default when it is free,
	// else a free port, printed. A set address must be free, or Start fails naming it and the
	// variable that moves it (see ports.go); port 0 picks a free port.
	//
	// RegistryAddr is where the local OCI registry listens.
	RegistryAddr string
	// ProbeAddr and MetricsAddr are the operator's endpoints.
	ProbeAddr   string
	MetricsAddr string
	// WebhookPort is the operator's webhook server port; the API server calls it on 127.0.0.1.
	WebhookPort int
	// GitAddr is where the git server holding the Catalyst samples' repository listens.
	GitAddr string
	// ManagerAddr and ManagerMetricsAddr are the operator manager's API (HTTPS) and metrics.
	ManagerAddr        string
	ManagerMetricsAddr string
	// OperatorBinary is the operator executable; built from ./cmd/operator when empty.
	OperatorBinary string
	// ManagerBinary is the manager executable; built from ./cmd/manager when empty.
	ManagerBinary string
	// LaterVersionDelay is how long after the environment is ready SampleLaterVersion of the
	// sample operator's chart is published (DefaultLaterVersionDelay when zero; never when
	// negative).
	LaterVersionDelay time.Duration
	// ChartDir is the chart published as the manager's sample operator; charts/slipway of the
	// repository around the working directory when empty.
	ChartDir string
	// RealNode adds a real node (containerd and a kubelet, realnode.go) beside kwok's; it needs
	// root. cmd/devenv turns it on by default ($SLIPWAY_REAL_NODE, --real-node).
	RealNode bool
	// Out receives progress and the status display.
	Out io.Writer
}

// Files in the state directory.
const (
	kubeconfigFile = "kubeconfig"
	pidFile        = "devenv.pid"
	readyFile      = "ready"
	logFile        = "devenv.log"
)

// Env is a running dev environment.
type Env struct {
	opts     Options
	cp       *controlplane.ControlPlane
	registry *http.Server
	git      *gittest.Server
	operator *exec.Cmd
	opDone   chan error
	samples  []sampleRef
	manager  *manager
	// later publishes the sample chart's later version (laterversion.go).
	later *laterVersion
	// With the real node: the registry's and the git server's addresses as pods reach them (the
	// gateway, forwarded to 127.0.0.1), and the forwarders (operatorpods.go).
	podRegistryAddr, podGitAddr string
	forwarders                  []*gatewayForwarder
	// releaseInstalled: the sample operator's release runs the operator (operatorpods.go).
	releaseInstalled bool
}

// Start brings everything up and returns once the node is Ready, the operator answers /readyz
// and the samples are applied.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if err := os.MkdirAll(filepath.Join(opts.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(opts.Dir, readyFile))
	step := func(format string, args ...any) {
		fmt.Fprintf(opts.Out, "==> "+format+"\n", args...)
	}
	// Ports first: a port in use fails here, in a second, not deep in a process's log.
	moved, err := opts.ports()
	if err != nil {
		return nil, err
	}
	for _, n := range moved {
		step("Port moved: %s", n)
	}
	env = &Env{opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, env.Stop())
			env = nil
		}
	}()
	crds, err := config.CRDs()
	if err != nil {
		return env, err
	}
	node, err := opts.realNodeOptions()
	if err != nil {
		return env, err
	}
	step("%s", opts.controlPlaneStep())
	start := time.Now()
	env.cp, err = controlplane.Start(ctx, controlplane.Options{
		Mode:     controlplane.Full,
		LogDir:   filepath.Join(opts.Dir, "logs"),
		CRDs:     crds,
		Scheme:   scheme.New(),
		RealNode: node,
	})
	if err != nil {
		return env, err
	}
	kubeconfig := filepath.Join(opts.Dir, kubeconfigFile)
	if _, err := env.cp.WriteKubeconfig(kubeconfig, "dev-admin"); err != nil {
		return env, err
	}
	step("Control plane ready in %s; %s", time.Since(start).Round(100*time.Millisecond), env.nodeReadyStep())

	step("Starting the OCI registry on %s", opts.RegistryAddr)
	if env.registry, err = startRegistry(opts.RegistryAddr, filepath.Join(opts.Dir, "logs", "registry.log")); err != nil {
		return env, err
	}

	if err := publishSampleBundle(ctx, opts.RegistryAddr); err != nil {
		return env, err
	}
	step("Published the sample bundle %s/%s (tags %s)", opts.RegistryAddr, sampleRepo, strings.Join(sampleTags, ", "))

	step("Serving the sample repository http://%s/%s", opts.GitAddr, sampleGitRepo)
	var head string
	if env.git, head, err = startGitServer(opts.Dir, opts.GitAddr); err != nil {
		return env, err
	}

	if err := env.reachableFromPods(step); err != nil {
		return env, err
	}
	if env.realNode() != nil {
		if err := env.startOperatorPods(ctx, step); err != nil {
			return env, err
		}
	} else if err := env.startOperatorProcess(ctx, step); err != nil {
		return env, err
	}

	if err := env.startSamplePods(ctx, step, env.podRegistryAddr, head); err != nil {
		return env, err
	}
	if env.samples, err = applySamples(ctx, env.cp.Client, env.podRegistryAddr, env.podGitAddr, head, opts.RealNode); err != nil {
		return env, err
	}
	step("Applied %d sample(s) from config/samples", len(env.samples))

	if err := env.runManager(ctx, step); err != nil {
		return env, err
	}

	if env.manager != nil {
		env.scheduleLaterVersion(env.manager.chartDir)
	}
	abs, _ := filepath.Abs(kubeconfig)
	kubectl := filepath.Join(opts.Dir, "..", "bin", "kubectl")
	_ = os.Remove(kubectl)
	if err := os.Symlink(filepath.Join(env.cp.Env.BinaryAssetsDirectory, "kubectl"), kubectl); err != nil {
		kubectl = filepath.Join(env.cp.Env.BinaryAssetsDirectory, "kubectl")
	}
	fmt.Fprintf(opts.Out, "\nReady in %s.\n", time.Since(start).Round(100*time.Millisecond))
	env.printPods(ctx, opts.Out)
	fmt.Fprintf(opts.Out, "  kubeconfig: %s\n", abs)
	fmt.Fprintf(opts.Out, "  try:        %s --kubeconfig %s get nodes\n", filepath.Clean(kubectl), kubeconfig)
	fmt.Fprintf(opts.Out, "  registry:   %s\n  git:        http://%s/%s\n", opts.RegistryAddr, opts.GitAddr, sampleGitRepo)
	if env.realNode() != nil {
		fmt.Fprintf(opts.Out, "  from pods:  registry %s, git http://%s/%s (the real node's gateway, forwarded to the above; the samples use these)\n",
			env.podRegistryAddr, env.podGitAddr, sampleGitRepo)
		env.printOperatorPods(ctx, opts.Out)
	} else {
		fmt.Fprintf(opts.Out, "  operator:   http://%s/healthz  http://%s/metrics  webhooks https://127.0.0.1:%d\n",
			opts.ProbeAddr, opts.MetricsAddr, opts.WebhookPort)
	}
	env.printManager(opts.Out)
	for _, n := range moved {
		fmt.Fprintf(opts.Out, "  moved:      %s\n", n)
	}
	fmt.Fprintf(opts.Out, "  logs:       %s\n\n", filepath.Join(opts.Dir, "logs"))
	// Ready only once the banner is whole: `devenv up` prints the log from "Ready in" when this file
	// appears, and on a loaded machine the lines above (API calls for the pod lists) take a while.
	if err := os.WriteFile(filepath.Join(opts.Dir, readyFile), []byte(time.Now().Format(time.RFC3339)), 0o644); err != nil {
		return env, err
	}
	return env, nil
}

// Options returns the options the environment runs with, every address resolved.
func (e *Env) Options() Options { return e.opts }

// OperatorExited is closed (with the operator's exit error) when the operator process ends.
func (e *Env) OperatorExited() <-chan error { return e.opDone }

// ManagerExited is closed (with the manager's exit error) when the manager process ends.
func (e *Env) ManagerExited() <-chan error {
	if e.manager == nil {
		return nil
	}
	return e.manager.done
}

// Stop stops the manager and the operator (gracefully), the registry and the control plane.
func (e *Env) Stop() error {
	var errs []error
	e.later.stop()
	errs = append(errs, e.manager.stop())
	if e.operator != nil && e.operator.Process != nil {
		_ = e.operator.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-e.opDone:
			errs = append(errs, ignoreSignalExit(err))
		case <-time.After(45 * time.Second):
			_ = e.operator.Process.Kill()
			errs = append(errs, ignoreSignalExit(<-e.opDone))
		}
	}
	for _, f := range e.forwarders {
		errs = append(errs, f.Close())
	}
	if e.registry != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, e.registry.Shutdown(ctx))
		cancel()
	}
	if e.git != nil {
		errs = append(errs, e.git.Close())
	}
	if e.cp != nil {
		errs = append(errs, e.cp.Stop())
	}
	_ = os.Remove(filepath.Join(e.opts.Dir, readyFile))
	return errors.Join(errs...)
}

// startOperatorProcess runs the operator on the host, without the real node: its RBAC bound to
// the user the operator's kubeconfig names, the webhook configurations pointed at it on
// 127.0.0.1, the process started and ready.
func (e *Env) startOperatorProcess(ctx context.Context, step func(string, ...any)) error {
	opts := e.opts
	step("Installing RBAC for the operator")
	operatorKubeconfig, err := e.cp.InstallOperatorIdentity(ctx, filepath.Join(opts.Dir, "operator.kubeconfig"))
	if err != nil {
		return err
	}
	step("Installing the webhook configurations (https://127.0.0.1:%d)", opts.WebhookPort)
	if err := installWebhooks(ctx, e.cp.Client, opts.WebhookPort); err != nil {
		return err
	}
	step("Starting the operator (health on %s, metrics on %s, webhooks on :%d)", opts.ProbeAddr, opts.MetricsAddr, opts.WebhookPort)
	return e.startOperator(ctx, operatorKubeconfig)
}

// reachableFromPods makes the registry and the git server reachable from the real node's pods
// at its gateway; without the node, pods are kwok's and the samples keep 127.0.0.1.
func (e *Env) reachableFromPods(step func(string, ...any)) error {
	e.podRegistryAddr, e.podGitAddr = e.opts.RegistryAddr, e.opts.GitAddr
	n := e.realNode()
	if n == nil {
		return nil
	}
	for _, a := range []*string{&e.podRegistryAddr, &e.podGitAddr} {
		f, addr, err := forwardFromGateway(n.Gateway, *a)
		if err != nil {
			return err
		}
		e.forwarders = append(e.forwarders, f)
		*a = addr
	}
	step("The registry and the git server answer pods at %s and %s (the real node's gateway)", e.podRegistryAddr, e.podGitAddr)
	return nil
}

func (e *Env) startOperator(ctx context.Context, kubeconfig string) error {
	bin := e.opts.OperatorBinary
	if bin == "" {
		bin = filepath.Join(e.opts.Dir, "bin", "operator")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/operator")
		build.Stdout, build.Stderr = e.opts.Out, e.opts.Out
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the operator: %w", err)
		}
	}
	logf, err := os.OpenFile(filepath.Join(e.opts.Dir, "logs", "operator.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--namespace="+controlplane.OperatorNamespace,
		"--health-probe-bind-address="+e.opts.ProbeAddr,
		"--metrics-bind-address="+e.opts.MetricsAddr,
		"--metrics-secure=false",
		"--leader-elect=true",
		// Outside a cluster nothing mounts the certificate Secret: the operator writes it to
		// its cert dir itself, for the API server calling it on 127.0.0.1.
		"--webhook-port="+strconv.Itoa(e.opts.WebhookPort),
		"--webhook-cert-dir="+filepath.Join(e.opts.Dir, "webhook-certs"),
		"--webhook-cert-mirror=true",
		"--webhook-cert-dns-names=localhost,127.0.0.1",
	)
	cmd.Args = append(cmd.Args, SampleOperatorArgs(e.opts.RealNode)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("starting the operator: %w", err)
	}
	e.operator = cmd
	e.opDone = make(chan error, 1)
	go func() { e.opDone <- cmd.Wait(); close(e.opDone); _ = logf.Close() }()
	return e.waitReady(ctx)
}

// waitReady waits for the operator's /readyz, which includes its webhook server serving a
// certificate the API server trusts.
func (e *Env) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := "http://" + e.opts.ProbeAddr + "/readyz?verbose"
	log := filepath.Join(e.opts.Dir, "logs", "operator.log")
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = string(body)
		} else {
			last = err.Error()
		}
		select {
		case err := <-e.opDone:
			return fmt.Errorf("the operator exited (%w); the end of %s:\n%s", err, log, tail(log, 15))
		case <-ctx.Done():
			return fmt.Errorf("the operator was not ready at %s: %w; its last answer:\n%s\nthe end of %s:\n%s", url, ctx.Err(), last, log, tail(log, 15))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of the file at path, or why it cannot be read.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// ignoreSignalExit drops the error of a process that ended on a signal we sent; any other exit
// error is kept.
func ignoreSignalExit(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil
		}
	}
	return err
}

// installWebhooks creates the generated webhook configurations, pointed at the operator on
// 127.0.0.1; the operator injects its CA into them.
func installWebhooks(ctx context.Context, c client.Client, port int) error {
	m, v, err := config.WebhookConfigurations(fmt.Sprintf("https://127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	for _, o := range []client.Object{m, v} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	return nil
}

func startRegistry(addr, logPath string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("registry: %w (%s or --registry-addr moves it)", err, EnvRegistryAddr)
	}
	srv := &http.Server{Handler: newRegistryHandler(logPath), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ctrl.Log.Error(err, "Registry stopped")
		}
	}()
	return srv, nil
}
