// Command devenv runs slipway locally with no cluster and no container engine.
//
//	devenv run    everything in the foreground, status until Ctrl-C (make dev)
//	devenv up     start in the background, return once ready (make dev-up)
//	devenv down   stop what up started; nothing is left behind (make dev-down)
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
	_ = fs.Parse(os.Args[2:])
	ctrl.SetLogger(zap.New())
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
	fmt.Fprintln(os.Stderr, "usage: devenv run|up|down [flags]")
	os.Exit(2)
}

// serve runs the environment until SIGINT or SIGTERM, then stops everything in order.
func serve(opts devenv.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pid := filepath.Join(opts.Dir, "devenv.pid")
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(pid, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(pid)
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
		"--manager="+opts.ManagerBinary, "--chart-dir="+opts.ChartDir)
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
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case <-sig:
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case err := <-done:
			killGroup(cmd.Process.Pid)
			return err
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

// down stops the environment started by up and makes sure its process group is gone.
func down(opts devenv.Options) error {
	pid, err := readPid(opts)
	if err != nil {
		fmt.Println("==> Nothing to stop")
		return nil
	}
	fmt.Printf("==> Stopping the dev environment (pid %d)\n", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(90 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	killGroup(pid)
	if groupAlive(pid) {
		return fmt.Errorf("processes of group %d are still running", pid)
	}
	_ = os.Remove(filepath.Join(opts.Dir, "devenv.pid"))
	fmt.Println("==> Stopped; no process left behind")
	return nil
}

func refuseRunning(opts devenv.Options) error {
	if pid, err := readPid(opts); err == nil && alive(pid) {
		return fmt.Errorf("a dev environment is already running (pid %d): make dev-down first", pid)
	}
	return nil
}

func readPid(opts devenv.Options) (int, error) {
	data, err := os.ReadFile(filepath.Join(opts.Dir, "devenv.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// killGroup kills whatever is left in the process group and waits until it is empty.
func killGroup(pgid int) {
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 50 && groupAlive(pgid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
}
