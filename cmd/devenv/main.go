// Command devenv runs slipway locally with no cluster and no container engine.
//
//	devenv run    everything in the foreground, status until Ctrl-C (make dev)
//	devenv up     start in the background, return once ready (make dev-up)
//	devenv down   stop what up started; nothing is left behind (make dev-down)
//	devenv ui-link write a new one-time sign-in link to the web UI into ui.url and print it
//
// Both run and up start `devenv serve` in its own process group; serve owns every process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/slipway-dev/slipway/internal/devenv"
	"github.com/slipway-dev/slipway/internal/procid"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	opts := devenv.Options{Out: os.Stdout}
	fs.StringVar(&opts.Dir, "dir", ".slipway/dev", "state directory (kubeconfig, logs)")
	// Every address is chosen free at start (its default when free) unless a flag or its variable
	// fixes it; a fixed address that is in use fails the start, naming both.
	fs.StringVar(&opts.RegistryAddr, "registry-addr", os.Getenv(devenv.EnvRegistryAddr),
		"address of the local OCI registry (default "+devenv.DefaultRegistryAddr+" when free; $"+devenv.EnvRegistryAddr+")")
	fs.StringVar(&opts.ProbeAddr, "probe-addr", os.Getenv(devenv.EnvProbeAddr),
		"operator health probe address (default "+devenv.DefaultProbeAddr+" when free; $"+devenv.EnvProbeAddr+")")
	fs.StringVar(&opts.MetricsAddr, "metrics-addr", os.Getenv(devenv.EnvMetricsAddr),
		"operator metrics address (default "+devenv.DefaultMetricsAddr+" when free; $"+devenv.EnvMetricsAddr+")")
	fs.StringVar(&opts.GitAddr, "git-addr", os.Getenv(devenv.EnvGitAddr),
		"address of the git server holding the Catalyst samples' repository (default "+devenv.DefaultGitAddr+" when free; $"+devenv.EnvGitAddr+")")
	fs.IntVar(&opts.WebhookPort, "webhook-port", 0,
		fmt.Sprintf("port of the operator's webhook server, called at https://127.0.0.1:<port> (default %d when free; $%s)", devenv.DefaultWebhookPort, devenv.EnvWebhookPort))
	fs.StringVar(&opts.ManagerAddr, "manager-addr", os.Getenv(devenv.EnvManagerAddr),
		"operator manager API address, https (default "+devenv.DefaultManagerAddr+" when free; $"+devenv.EnvManagerAddr+")")
	fs.StringVar(&opts.ManagerMetricsAddr, "manager-metrics-addr", os.Getenv(devenv.EnvManagerMetricsAddr),
		"operator manager metrics address (default "+devenv.DefaultManagerMetricsAddr+" when free; $"+devenv.EnvManagerMetricsAddr+")")
	fs.StringVar(&opts.OperatorBinary, "operator", "", "operator binary (default: build ./cmd/operator)")
	fs.StringVar(&opts.ManagerBinary, "manager", "", "operator manager binary (default: build ./cmd/manager)")
	fs.StringVar(&opts.ChartDir, "chart-dir", "", "chart published as the manager's sample operator (default: charts/slipway of this repository)")
	fs.DurationVar(&opts.LaterVersionDelay, "later-version-delay", devenv.DefaultLaterVersionDelay,
		"how long after the environment is ready version "+devenv.SampleLaterVersion+" of the sample operator's chart is published (negative: never)")
	realNode, realNodeWhy, realNodeErr := devenv.RealNodeDefault()
	fs.BoolVar(&opts.RealNode, "real-node", realNode,
		"run a real node (containerd, kubelet; needs root) beside kwok's simulated one (default from $"+devenv.EnvRealNode+": "+realNodeWhy+")")
	_ = fs.Parse(os.Args[2:])
	ctrl.SetLogger(zap.New())
	if realNodeErr != nil && !flagSet(fs, "real-node") {
		fmt.Fprintln(os.Stderr, "devenv:", realNodeErr)
		os.Exit(2)
	}
	if err := webhookPortFromEnv(fs, &opts); err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(2)
	}

	var err error
	switch os.Args[1] {
	case "run":
		err = supervise(opts)
	case "up":
		err = up(opts)
	case "down":
		err = down(opts)
	case "serve":
		err = serve(opts)
	case "ui-link":
		err = uiLink(opts)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(1)
	}
}

// webhookPortFromEnv reads the webhook port's variable when the flag is not given.
func webhookPortFromEnv(fs *flag.FlagSet, opts *devenv.Options) error {
	v := os.Getenv(devenv.EnvWebhookPort)
	if v == "" || flagSet(fs, "webhook-port") {
		return nil
	}
	port, err := strconv.Atoi(v)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("%s=%q is not a port number (0-65535)", devenv.EnvWebhookPort, v)
	}
	opts.WebhookPort = port
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: devenv run|up|down|ui-link [flags]")
	os.Exit(2)
}

// uiLink writes a new one-time sign-in link for the running environment's web UI (the one in
// ui.url was used) and prints it.
func uiLink(opts devenv.Options) error {
	bin := opts.ManagerBinary
	if bin == "" {
		bin = filepath.Join(opts.Dir, "bin", "manager")
	}
	link, err := devenv.RefreshUILink(context.Background(), opts.Dir, bin)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.Out, link)
	return nil
}

// serve runs the environment until SIGINT or SIGTERM, then stops everything in order.
func serve(opts devenv.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := writePidFile(opts.Dir); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(opts.Dir, pidFile))
	env, err := devenv.Start(ctx, opts)
	if err != nil {
		return err
	}
	statusCtx, cancel := context.WithCancel(ctx)
	go env.ShowStatus(statusCtx, opts.Out, 2*time.Second)
	select {
	case <-ctx.Done():
		fmt.Fprintln(opts.Out, "\n==> Stopping")
	case err := <-env.OperatorExited():
		fmt.Fprintf(opts.Out, "\n==> The operator exited (%v); stopping\n", err)
	case err := <-env.ManagerExited():
		fmt.Fprintf(opts.Out, "\n==> The operator manager exited (%v; see %s); stopping\n", err, filepath.Join(opts.Dir, "logs", "manager.log"))
	}
	cancel()
	if err := env.Stop(); err != nil {
		return err
	}
	fmt.Fprintln(opts.Out, "==> Stopped")
	return nil
}

func serveCmd(opts devenv.Options) *exec.Cmd {
	self, _ := os.Executable()
	return exec.Command(self, "serve", "--dir="+opts.Dir, "--registry-addr="+opts.RegistryAddr,
		"--probe-addr="+opts.ProbeAddr, "--metrics-addr="+opts.MetricsAddr, "--webhook-port="+strconv.Itoa(opts.WebhookPort), "--git-addr="+opts.GitAddr,
		"--operator="+opts.OperatorBinary, "--manager-addr="+opts.ManagerAddr, "--manager-metrics-addr="+opts.ManagerMetricsAddr,
		"--manager="+opts.ManagerBinary, "--chart-dir="+opts.ChartDir, "--later-version-delay="+opts.LaterVersionDelay.String(),
		"--real-node="+strconv.FormatBool(opts.RealNode))
}

// supervise runs serve in the foreground, in its own process group so Ctrl-C reaches only this
// process, which forwards it as SIGTERM and waits for an orderly shutdown.
func supervise(opts devenv.Options) error {
	if err := refuseRunning(opts); err != nil {
		return err
	}
	cmd := serveCmd(opts)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		return err
	}
	// Opened before the Wait below reaps serve, so it names serve: what is left of its group is
	// killed through it once serve has gone, never a group that took the number since.
	id, err := procid.Of(cmd.Process.Pid)
	var p *procid.Process
	if err == nil {
		p, err = procid.Open(id)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return errors.Join(err, cmd.Wait())
	}
	defer p.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case <-sig:
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case err := <-done:
			return errors.Join(err, killGroup(p))
		}
	}
}

// up starts serve detached (its own session), logs to the state directory and returns once ready.
func up(opts devenv.Options) error {
	if err := refuseRunning(opts); err != nil {
		return err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(opts.Dir, "devenv.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	_ = os.Remove(filepath.Join(opts.Dir, "ready"))
	cmd := serveCmd(opts)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Printf("==> Starting in the background (log: %s)\n", logPath)
	deadline := time.After(10 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(opts.Dir, "ready")); err == nil {
			out, _ := os.ReadFile(logPath)
			fmt.Print(readyBanner(string(out)))
			fmt.Println("Stop it with: make dev-down")
			return nil
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("the environment exited before it was ready (%w):\n%s", err, out)
		case <-deadline:
			return fmt.Errorf("not ready after 10 minutes; see %s", logPath)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// readyBanner is the part of the log from the "Ready in" line to the first status table.
func readyBanner(log string) string {
	i := strings.Index(log, "\nReady in")
	if i < 0 {
		return log
	}
	log = log[i+1:]
	if j := strings.Index(log, "--- "); j >= 0 {
		log = log[:j]
	}
	return log
}

// pidFile in the state directory holds the identity of the running serve process (procid's
// "PID START-TIME BOOT-ID"), not its bare PID: after a crash the file stays behind and its PID may
// belong to any process, which down must not signal.
const pidFile = "devenv.pid"

// writePidFile records this process's identity in dir.
func writePidFile(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	id, err := procid.Self()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, pidFile), []byte(id.String()+"\n"), 0o644)
}

// running returns a handle on the serve process the pid file names, or nil when none runs. A pid
// file that names no live serve (left by a crash, its PID perhaps another process's now) or no
// identity at all is reported and removed; nothing is signalled.
func running(opts devenv.Options) (*procid.Process, error) {
	path := filepath.Join(opts.Dir, pidFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	id, err := procid.Parse(string(data))
	if err != nil {
		fmt.Fprintf(opts.Out, "==> Removed %s, which does not identify a process (%v); signalled nothing. "+
			"A dev environment started by an older devenv must be stopped by hand\n", path, err)
	} else {
		p, err := procid.Open(id)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, procid.ErrGone) {
			return nil, err
		}
		fmt.Fprintf(opts.Out, "==> Removed the stale %s: the dev environment it names (pid %d) is gone (%v); signalled nothing\n",
			path, id.PID, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return nil, nil
}

// down stops the environment started by up and makes sure its process group is gone. Every
// signal goes through a pidfd opened on the very process the pid file identifies.
func down(opts devenv.Options) error {
	p, err := running(opts)
	if err != nil {
		return err
	}
	if p == nil {
		fmt.Fprintln(opts.Out, "==> Nothing to stop")
		return nil
	}
	defer p.Close()
	fmt.Fprintf(opts.Out, "==> Stopping the dev environment (pid %d)\n", p.ID.PID)
	if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, procid.ErrGone) {
		return err
	}
	p.Wait(90 * time.Second)
	if err := killGroup(p); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(opts.Dir, pidFile))
	fmt.Fprintln(opts.Out, "==> Stopped; no process left behind")
	return nil
}

func refuseRunning(opts devenv.Options) error {
	p, err := running(opts)
	if err != nil {
		return err
	}
	if p != nil {
		p.Close()
		return fmt.Errorf("a dev environment is already running (pid %d): make dev-down first", p.ID.PID)
	}
	return nil
}

// killGroup kills whatever is left in the process group p leads and waits until it is empty. The
// signal goes through p's pidfd, so it reaches that group even once p has gone, and no group that
// took the number since.
func killGroup(p *procid.Process) error {
	err := p.SignalGroup(syscall.SIGKILL)
	if errors.Is(err, procid.ErrGone) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := 0; i < 50 && p.GroupAlive(); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if p.GroupAlive() {
		return fmt.Errorf("processes of group %d are still running", p.ID.PID)
	}
	return nil
}
