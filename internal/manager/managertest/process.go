package managertest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/slipway-dev/slipway/internal/procid"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// process is one `manager serve`, in its own process group, killed with its group when its
// life ends (and by the kernel when the test binary dies).
type process struct {
	cmd    *exec.Cmd
	child  *procid.Child
	exited chan struct{}
	err    error
}

var servingLine = regexp.MustCompile(`^serving (https?://\S+)$`)

// serve starts bin with args and env, its standard error into log, and returns once it printed
// the URL it serves (2 minutes at most).
func serve(bin string, args, env []string, log *testenv.SyncBuffer) (*process, string, error) {
	p := &process{exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stderr = log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting manager serve: %w", err)
	}
	p.child = procid.Watch(p.cmd) // reaps it; kill signals its group only until then
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		<-p.child.Done()
		p.err = p.child.Err()
		close(p.exited)
	}()
	select {
	case url := <-urls:
		return p, url, nil
	case <-p.exited:
		return nil, "", fmt.Errorf("manager serve ended before serving: %v; log:\n%s", p.err, log.String())
	case <-time.After(2 * time.Minute):
		p.kill()
		return nil, "", fmt.Errorf("manager serve printed no URL within 2m; log:\n%s", log.String())
	}
}

// kill ends the process and its group with SIGKILL and waits for it.
func (p *process) kill() {
	_ = p.child.SignalGroup(syscall.SIGKILL)
	<-p.exited
}

// Result is how a one-shot manager command ended.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs a one-shot manager subcommand (login-link, token, gen-key, …) with the manager's
// environment (its secret and keys); 2 minutes at most.
func (m *Manager) Run(args ...string) (Result, error) {
	return run(m.bin, m.env, args...)
}

func run(bin string, env []string, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("manager %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}

// processEnv is the test binary's environment without any SLIPWAY_MANAGER_ or OTEL_ variable,
// plus extra.
func processEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLIPWAY_MANAGER_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
