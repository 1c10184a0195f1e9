//go:build e2e

package main_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/procid"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// deployment is one manager installation: a database (SQLite file or PostgreSQL database), an
// HS256 secret and an encryption keyring, handed to the binary the way docs/manager.md says:
// secrets in environment variables, the SQLite file with --database-path.
type deployment struct {
	t      testing.TB
	bin    string
	engine string
	dir    string
	// dbPath is the SQLite file; dbURL the PostgreSQL database.
	dbPath, dbURL string
	secret        []byte
	// keys is the keyring text ("id:base64" lines, the first the primary).
	keys string
	// extraEnv are more NAME=value variables of every process (e.g. the SMTP password).
	extraEnv []string
}

func newDeployment(t testing.TB, engine string) *deployment {
	t.Helper()
	d := &deployment{t: t, bin: managerBinary(t), engine: engine, dir: t.TempDir(),
		secret: []byte("manager-binary-test-secret-0123456789abcdef")}
	switch engine {
	case "sqlite":
		d.dbPath = filepath.Join(d.dir, "manager.db")
	case "postgres":
		d.dbURL = pgtest.NewDatabase(t)
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	d.keys = genKey(t, d)
	return d
}

// genKey runs manager gen-key.
func genKey(t testing.TB, d *deployment) string {
	t.Helper()
	r := d.run("gen-key")
	if r.code != 0 {
		t.Fatalf("manager gen-key: exit %d: %s", r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// env is the process environment: the test binary's, without any SLIPWAY_MANAGER_ variable, plus
// the deployment's secrets.
func (d *deployment) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLIPWAY_MANAGER_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	env = append(env, "SLIPWAY_MANAGER_JWT_SECRET="+string(d.secret), "SLIPWAY_MANAGER_ENCRYPTION_KEYS="+d.keys)
	if d.dbURL != "" {
		env = append(env, "SLIPWAY_MANAGER_DATABASE_URL="+d.dbURL)
	}
	return append(env, d.extraEnv...)
}

// dbArgs are the database flags of every command.
func (d *deployment) dbArgs() []string {
	if d.dbPath != "" {
		return []string{"--database-path=" + d.dbPath}
	}
	return nil
}

// token mints a token as the server expects it (the token command is tested on its own).
func (d *deployment) token(subject string, roles ...auth.Role) string {
	d.t.Helper()
	tok, err := auth.Mint(d.secret, subject, roles, time.Hour, time.Now())
	if err != nil {
		d.t.Fatal(err)
	}
	return tok
}

func (d *deployment) admin() string { return d.token("alice", auth.Admin) }

// result is how a one-shot command ended.
type result struct {
	code           int
	stdout, stderr string
}

// run runs a one-shot subcommand (migrate, token, rotate-key, gen-key) with the deployment's
// environment; the database flags are added for commands that take them.
func (d *deployment) run(args ...string) result {
	d.t.Helper()
	if len(args) > 0 && (args[0] == "migrate" || args[0] == "rotate-key") {
		args = append(append([]string{args[0]}, d.dbArgs()...), args[1:]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Env = d.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		d.t.Fatalf("manager %s: %v", strings.Join(args, " "), err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// proc is one `manager serve` process.
type proc struct {
	t    testing.TB
	d    *deployment
	args []string
	// URL is the API's base URL, from the "serving <url>" line the command prints.
	URL    string
	client *http.Client
	// stderr is the process's log output.
	stderr *testenv.SyncBuffer
	// bodies collects every response body, for the secrecy checks.
	bodies *testenv.SyncBuffer

	cmd    *exec.Cmd
	child  *procid.Child
	exited chan struct{}
	err    error
}

var servingLine = regexp.MustCompile(`^serving (https?://\S+)$`)

// serve starts `manager serve` on a free loopback port with its metrics on another (the default
// 127.0.0.1:9464 would collide between processes), plus args, and waits until it prints the URL
// it serves. The process is killed when the test ends; its log is printed when the test failed.
func (d *deployment) serve(args ...string) *proc {
	d.t.Helper()
	p, err := d.startServe(args...)
	if err != nil {
		d.t.Fatal(err)
	}
	return p
}

// startServe is serve returning the error (the process's log in it) instead of failing.
func (d *deployment) startServe(args ...string) (*proc, error) {
	p := &proc{t: d.t, d: d, stderr: &testenv.SyncBuffer{}, bodies: &testenv.SyncBuffer{}, exited: make(chan struct{}),
		client: &http.Client{Timeout: time.Minute}}
	p.args = append(append([]string{"serve", "--address=127.0.0.1:0", "--metrics-address=127.0.0.1:0"}, d.dbArgs()...), args...)
	p.cmd = exec.Command(d.bin, p.args...)
	p.cmd.Env = d.env()
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting manager serve: %w", err)
	}
	p.child = procid.Watch(p.cmd) // reaps it; Kill signals its group only until then
	d.t.Cleanup(func() {
		p.Kill()
		if d.t.Failed() {
			d.t.Logf("manager serve %s log:\n%s", strings.Join(p.args[1:], " "), tailLines(p.stderr.Bytes(), 40))
		}
	})
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
	case p.URL = <-urls:
		return p, nil
	case <-p.exited:
		return nil, &exitError{err: p.err, log: string(p.stderr.Bytes())}
	case <-time.After(2 * time.Minute):
		p.Kill()
		return nil, fmt.Errorf("manager serve printed no URL within 2m; log:\n%s", p.stderr.Bytes())
	}
}

// exitError is a serve process that ended before serving.
type exitError struct {
	err error
	log string
}

func (e *exitError) Error() string {
	return fmt.Sprintf("manager serve ended: %v; log:\n%s", e.err, e.log)
}

// Kill ends the process and its group with SIGKILL (a crash: no shutdown, no cleanup) and waits
// for it. The group's ID is the process's PID, which passes to another process once it is reaped:
// procid.Child sends the signal only while it is not, so it reaches this group or no one.
func (p *proc) Kill() {
	_ = p.child.SignalGroup(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM and waits for the exit; it fails the test when the exit is not clean.
func (p *proc) Stop() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.Kill()
		p.t.Fatal("manager serve did not stop within a minute of SIGTERM")
	}
	if p.err != nil {
		p.t.Fatalf("manager serve ended with %v after SIGTERM", p.err)
	}
}

// RSS is the process's resident set size (VmRSS) in bytes.
func (p *proc) RSS() (int64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// response is one answer of the API.
type response struct {
	status int
	body   []byte
	header http.Header
}

// do sends a request (body: nil, a string, or bytes) and reads the whole answer.
func (p *proc) do(method, path, token string, body []byte) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, p.URL+path, rd)
	if err != nil {
		return response{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	_, _ = p.bodies.Write(data)
	return response{status: resp.StatusCode, body: data, header: resp.Header}, err
}

// must is do failing the test on a transport error or a status other than want.
func (p *proc) must(method, path, token string, body []byte, want int) response {
	p.t.Helper()
	r, err := p.do(method, path, token, body)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.status != want {
		p.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

func tailLines(data []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// keyLine returns a fresh keyring line with the given key id.
func keyLine(t testing.TB, id string) string {
	t.Helper()
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	_, key, ok := strings.Cut(line, ":")
	if !ok {
		t.Fatalf("gen-key line %q has no id", line)
	}
	return id + ":" + key
}
