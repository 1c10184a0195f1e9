//go:build e2e

package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// What the watch tests drive slipway with: the built binary in a pseudo-terminal whose output a
// terminal emulator turns into a screen; slipway in-process in the background over buffers
// that can be read while it runs; a TCP proxy in front of the manager that cuts every
// connection on demand.

// ptyRun is the built slipway running in a pseudo-terminal of a fixed size. Everything it
// writes is fed to a VT emulator (the screen and its scrollback) and kept raw.
type ptyRun struct {
	cmd    *exec.Cmd
	tty    *os.File
	mu     sync.Mutex
	emu    *vt.Emulator
	raw    bytes.Buffer
	read   chan struct{} // closed when the terminal's output is read to its end
	exited chan struct{}
	err    error
}

// startPTY runs bin with args in a cols × rows pseudo-terminal, with SLIPWAY_CONFIG cfg and the
// context user; the test's end kills it if it still runs.
func startPTY(t *testing.T, bin, cfg, user string, cols, rows int, args ...string) *ptyRun {
	t.Helper()
	p := &ptyRun{emu: vt.NewEmulator(cols, rows), read: make(chan struct{}), exited: make(chan struct{})}
	p.emu.SetScrollbackSize(10000)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(envWithout("SLIPWAY_", "NO_COLOR", "CLICOLOR"), config.EnvConfig+"="+cfg, EnvContext+"="+user, "TERM=xterm-256color")
	var err error
	p.tty, err = pty.StartWithSize(p.cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Fatalf("starting slipway in a pseudo-terminal: %v", err)
	}
	go p.pump()
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		_ = p.tty.Close()
		if t.Failed() {
			t.Logf("slipway's terminal at the end:\n%s", p.screen())
		}
	})
	return p
}

// envWithout is the test's environment without the variables starting with any of prefixes.
func envWithout(prefixes ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range prefixes {
			keep = keep && !strings.HasPrefix(kv, p)
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// pump feeds the terminal's output to the emulator until it ends (EIO once slipway exited).
func (p *ptyRun) pump() {
	defer close(p.read)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.tty.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.raw.Write(buf[:n])
			_, _ = p.emu.Write(buf[:n])
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// screen is the emulator's screen, trailing blanks trimmed.
func (p *ptyRun) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.emu.String()
}

// lines are the scrollback's lines and then the screen's.
func (p *ptyRun) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.emu.Scrollback().Lines() {
		out = append(out, strings.TrimRight(l.String(), " "))
	}
	return append(out, strings.Split(p.emu.String(), "\n")...)
}

func (p *ptyRun) rawOutput() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw.String()
}

func (p *ptyRun) cursorHidden() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.emu.CursorHidden()
}

func (p *ptyRun) altScreen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.emu.IsAltScreen()
}

// waitScreen waits until the screen shows want; timeout, or slipway exiting first, fails the
// test.
func (p *ptyRun) waitScreen(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	until(t, timeout, "the screen shows "+want, func() bool {
		if strings.Contains(p.screen(), want) {
			return true
		}
		select {
		case <-p.exited:
			t.Fatalf("slipway exited before its screen showed %q", want)
		default:
		}
		return false
	})
}

// until polls cond every 100 ms until it holds; timeout fails the test, naming what.
func until(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// interrupt types Ctrl-C: the terminal sends SIGINT to slipway.
func (p *ptyRun) interrupt(t *testing.T) {
	t.Helper()
	if _, err := p.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
}

// wait waits until slipway exits (timeout fails the test) and its output is read, and returns
// its exit code.
func (p *ptyRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("slipway still runs after %s; its screen:\n%s", timeout, p.screen())
	}
	select {
	case <-p.read:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal's output did not end after slipway exited")
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("slipway was killed by %s", ws.Signal())
		}
		return exit.ExitCode()
	}
	t.Fatal(p.err)
	return -1
}

// bgRun is slipway run in-process in the background, its output readable while it runs.
type bgRun struct {
	Out, Err *testenv.SyncBuffer
	done     chan int
}

// startBackground runs slipway with args as user (a context of cfg) through a Factory whose
// streams are not terminals.
func startBackground(t *testing.T, cfg, user string, args ...string) *bgRun {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	r := &bgRun{Out: &testenv.SyncBuffer{}, Err: &testenv.SyncBuffer{}, done: make(chan int, 1)}
	ios.Out, ios.ErrOut = r.Out, r.Err
	env := map[string]string{config.EnvConfig: cfg, EnvContext: user}
	f := NewFactory(ios, func(k string) string { return env[k] })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- Run(ctx, f, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Errorf("slipway %s did not stop 10 s after its context was cancelled", strings.Join(args, " "))
		}
	})
	return r
}

// wait waits for the run's exit code (timeout fails the test).
func (r *bgRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(timeout):
		t.Fatalf("slipway still runs after %s\nstdout:\n%s\nstderr:\n%s", timeout, r.Out.String(), r.Err.String())
	}
	return -1
}

// dropProxy forwards TCP connections to a server (TLS passes through untouched) and cuts them
// all on demand, as a restarting load balancer would.
type dropProxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int64
	mu       sync.Mutex
	open     map[net.Conn]bool
}

// startDropProxy proxies to the host of serverURL; its URL is the same scheme on its own port.
func startDropProxy(t *testing.T, serverURL string) *dropProxy {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: u.Host, open: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.drop()
	})
	return p
}

// URL is the proxy's base URL (https).
func (p *dropProxy) URL() string { return "https://" + p.ln.Addr().String() }

func (p *dropProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.open[c], p.open[up] = true, true
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
			p.mu.Lock()
			delete(p.open, dst)
			delete(p.open, src)
			p.mu.Unlock()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// drop closes every open connection and returns how many client connections it cut.
func (p *dropProxy) drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.open {
		_ = c.Close()
	}
	n := len(p.open) / 2
	clear(p.open)
	return n
}
