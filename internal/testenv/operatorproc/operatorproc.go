// Package operatorproc runs the operator binary (cmd/operator) as a separate process in tests and
// benchmarks, the way users run it: built once per test binary, started with its flags and a
// kubeconfig (for the operator's RBAC identity, controlplane.InstallOperatorIdentity), killed,
// restarted, probed, measured and scraped.
//
//	bin := operatorproc.Binary(t)
//	p := operatorproc.Start(t, bin, operatorproc.Options{Kubeconfig: kc, Args: []string{"--controllers=webapp"}})
//	p.WaitReady(ctx, t)
//	_ = p.Kill()      // SIGKILL, as a crash
//	_ = p.Restart()   // same flags and ports
//	cur, peak, _ := p.RSS() // or p.Memory(), anonymous and file-backed apart
//	jobs, _ := p.MetricSum(ctx, "slipway_werfbundle_jobs_created_total", nil)
//
// The harness chooses free ports for metrics (plain HTTP), probes and webhooks, and a webhook
// certificate directory, and passes them as flags before Options.Args. Every start appends to one
// log file, removed after a passing test and kept after a failing one (its path and last lines are
// logged), like the control-plane logs of internal/testenv. The process runs in its own process
// group and gets SIGKILL when the test binary dies; the test's cleanup kills the group, so no
// operator outlives its test, whatever the test's outcome.
package operatorproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/procid"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// Package is the operator's main package, relative to the module root.
const Package = "./cmd/operator"

// ShippedBuildFlags are the go build flags of the released binary (the Dockerfile's, with
// CGO_ENABLED=0): measurements and process tests run what users run. A build without them holds
// the symbol table and DWARF data, and its resident size is about 20 MiB larger.
var ShippedBuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// BinaryEnv names an environment variable that, when set, is the path of an operator binary to use
// instead of building one (e.g. the output of make build, to measure exactly what ships).
const BinaryEnv = "SLIPWAY_OPERATOR_BINARY"

var (
	buildMu  sync.Mutex
	binaries = map[string]string{} // package path -> binary
)

// Binary builds the operator (Package) with the released binary's flags (ShippedBuildFlags) once
// per test binary and returns the executable's path; later calls return the same path. With
// $SLIPWAY_OPERATOR_BINARY set (BinaryEnv) it uses that binary instead. The binary lives in a directory named after this process's
// PID under the system's temporary directory; directories of test binaries that are no longer
// running are removed on the next build.
func Binary(tb testing.TB) string {
	tb.Helper()
	return BinaryOf(tb, Package, BinaryEnv)
}

// moduleRoot is the nearest directory at or above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// removeStale removes the binaries of test processes that have ended.
func removeStale(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", e.Name())); errors.Is(err, os.ErrNotExist) {
			_ = os.RemoveAll(filepath.Join(base, strconv.Itoa(pid)))
		}
	}
}

// Options say how to run the operator.
type Options struct {
	// Name names the process in logs and its log file; default "operator".
	Name string
	// Kubeconfig is the operator's --kubeconfig (required).
	Kubeconfig string
	// Args are further flags, after the harness's own (--kubeconfig, --metrics-bind-address,
	// --metrics-secure=false, --health-probe-bind-address, --webhook-port, --webhook-cert-dir).
	// Leave those alone: the Process's addresses would no longer be the operator's.
	Args []string
	// Env is added to the test binary's environment.
	Env []string
}

// Process is one operator process, restartable with the same flags and ports.
type Process struct {
	// Name is Options.Name.
	Name string
	// MetricsAddr, ProbeAddr and WebhookAddr are the host:port the operator serves metrics
	// (HTTP), /healthz and /readyz, and webhooks (HTTPS) on.
	MetricsAddr, ProbeAddr, WebhookAddr string
	// WebhookCertDir is the operator's --webhook-cert-dir, kept across restarts.
	WebhookCertDir string
	// LogPath is the file the operator's standard output and error go to, every start appended.
	LogPath string

	bin  string
	args []string
	env  []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	// gone is set, under mu, once the current process has ended and before it is reaped: until
	// then its PID, and so its process group's ID, cannot name another process (see Signal).
	gone    bool
	err     error
	starts  int
	peakRSS int64 // the highest peak RSS of the processes that have ended
	log     *os.File
	closed  bool
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Start starts the operator binary bin (see Binary) and stops it when tb ends. It does not wait
// for readiness: see WaitReady.
func Start(tb testing.TB, bin string, opts Options) *Process {
	tb.Helper()
	if opts.Kubeconfig == "" {
		tb.Fatal("operatorproc: Options.Kubeconfig is required")
	}
	if opts.Name == "" {
		opts.Name = "operator"
	}
	logDir := logDir(tb.Name() + "-" + opts.Name)
	logPath := filepath.Join(logDir, unsafeChars.ReplaceAllString(opts.Name, "_")+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Process{
		Name:           opts.Name,
		MetricsAddr:    testenv.FreeAddr(tb),
		ProbeAddr:      testenv.FreeAddr(tb),
		WebhookAddr:    testenv.FreeAddr(tb),
		WebhookCertDir: filepath.Join(logDir, "webhook-certs"),
		LogPath:        logPath,
		bin:            bin,
		env:            append(os.Environ(), opts.Env...),
		log:            log,
	}
	_, webhookPort, _ := net.SplitHostPort(p.WebhookAddr)
	p.args = append([]string{
		"--kubeconfig=" + opts.Kubeconfig,
		"--metrics-bind-address=" + p.MetricsAddr,
		"--metrics-secure=false",
		"--health-probe-bind-address=" + p.ProbeAddr,
		"--webhook-port=" + webhookPort,
		"--webhook-cert-dir=" + p.WebhookCertDir,
	}, opts.Args...)
	tb.Cleanup(func() {
		p.close()
		if tb.Failed() {
			tb.Logf("%s log kept in %s; last lines:\n%s", p.Name, logPath, tail(logPath, 60))
			return
		}
		_ = os.RemoveAll(logDir)
	})
	if err := p.start(); err != nil {
		tb.Fatal(err)
	}
	return p
}

func logDir(name string) string {
	base := os.Getenv("SLIPWAY_TEST_LOGS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "slipway-test-logs")
	}
	_ = os.MkdirAll(base, 0o755)
	dir, err := os.MkdirTemp(base, unsafeChars.ReplaceAllString(name, "_")+"-")
	if err != nil {
		dir = filepath.Join(base, unsafeChars.ReplaceAllString(name, "_"))
		_ = os.MkdirAll(dir, 0o755)
	}
	return dir
}

func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("%s: the test has ended", p.Name)
	}
	if p.cmd != nil && !isClosed(p.exited) {
		return fmt.Errorf("%s is running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	p.starts++
	_, _ = fmt.Fprintf(p.log, "\n[operatorproc] %s start %d: %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.starts, p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Its own process group, so a kill reaches anything it starts; SIGKILL when the test binary
	// dies without cleaning up (a panic, a timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := controlplane.StartDyingWithParent(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.err, p.gone = cmd, exited, nil, false
	go func() {
		// Learn of the end without reaping, and mark it before the reap frees the PID.
		procid.WaitExited(cmd.Process.Pid)
		p.mu.Lock()
		p.gone = true
		p.mu.Unlock()
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			p.peakRSS = max(p.peakRSS, ru.Maxrss<<10) // kilobytes on Linux
		}
		_, _ = fmt.Fprintf(p.log, "[operatorproc] %s exited: %v\n", time.Now().UTC().Format(time.RFC3339Nano), cmd.ProcessState)
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// current returns the running (or last) command and its exit channel.
func (p *Process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// Pid is the current process's ID.
func (p *Process) Pid() int {
	cmd, _ := p.current()
	return cmd.Process.Pid
}

// Starts is how many times the operator has been started.
func (p *Process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Exited is closed when the current process has ended.
func (p *Process) Exited() <-chan struct{} {
	_, exited := p.current()
	return exited
}

// Running reports whether the current process has not ended.
func (p *Process) Running() bool { return !isClosed(p.Exited()) }

// Err is how the last process ended (nil for status 0); nil while it runs.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Signal sends sig to the operator's process group; nothing once the operator has ended. The group
// is named by the operator's PID, which the kernel hands to another process once the operator is
// reaped: the signal goes out under mu while the operator is not yet reaped (gone is false), so it
// reaches the operator's group or no one.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.gone {
		return nil
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	return nil
}

// Kill ends the operator with SIGKILL, as a crash does (no Lease release, no cleanup), and waits
// until it has ended. Killing an ended process does nothing.
func (p *Process) Kill() error {
	cmd, exited := p.current()
	if cmd == nil {
		return nil
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-exited
	return nil
}

// Stop sends SIGTERM and waits for a graceful exit; it returns how the process ended (nil for
// status 0), or ctx's error, after killing the process, when ctx ends first.
func (p *Process) Stop(ctx context.Context) error {
	_, exited := p.current()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-exited:
		return p.Err()
	case <-ctx.Done():
		_ = p.Kill()
		return fmt.Errorf("%s did not stop after SIGTERM: %w", p.Name, ctx.Err())
	}
}

// Restart kills the operator if it runs and starts it again with the same flags and ports.
func (p *Process) Restart() error {
	if err := p.Kill(); err != nil {
		return err
	}
	return p.start()
}

// close kills the operator for good; later starts fail.
func (p *Process) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.Kill()
	p.mu.Lock()
	_ = p.log.Close()
	p.mu.Unlock()
}

var probeClient = &http.Client{Timeout: 2 * time.Second}

// Ready reports whether the operator's /readyz answers 200.
func (p *Process) Ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.ProbeAddr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady waits until /readyz answers 200; it fails tb when the process ends first or ctx
// ends.
func (p *Process) WaitReady(ctx context.Context, tb testing.TB) {
	tb.Helper()
	if err := p.waitReady(ctx); err != nil {
		tb.Fatal(err)
	}
}

// WaitReadyErr is WaitReady returning the error, for goroutines that may not fail the test.
func (p *Process) WaitReadyErr(ctx context.Context) error { return p.waitReady(ctx) }

func (p *Process) waitReady(ctx context.Context) error {
	exited := p.Exited()
	for {
		if p.Ready(ctx) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %v (log %s)", p.Name, p.Err(), p.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (log %s)", p.Name, ctx.Err(), p.LogPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Memory is a running operator's memory as /proc/<pid>/status reports it, in bytes.
type Memory struct {
	// RSS is the resident set size (VmRSS): Anon + File (+ shared memory).
	RSS int64
	// Peak is the highest RSS so far (VmHWM).
	Peak int64
	// Anon is the resident anonymous memory (RssAnon): the Go heap, stacks and runtime.
	Anon int64
	// File is the resident file-backed memory (RssFile): mostly the mapped pages of the binary,
	// shared with the page cache and reclaimable.
	File int64
}

// Memory reads the running process's memory.
func (p *Process) Memory() (Memory, error) {
	cmd, exited := p.current()
	if cmd == nil || isClosed(exited) {
		return Memory{}, fmt.Errorf("%s is not running", p.Name)
	}
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status"))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "VmHWM:":
			m.Peak = kb << 10
		case "RssAnon:":
			m.Anon = kb << 10
		case "RssFile:":
			m.File = kb << 10
		}
	}
	if m.Peak == 0 {
		return Memory{}, fmt.Errorf("no VmHWM in /proc/%d/status (has it ended?)", cmd.Process.Pid)
	}
	return m, nil
}

// RSS returns the running process's resident set size and its peak so far (VmRSS and VmHWM in
// /proc/<pid>/status), in bytes.
func (p *Process) RSS() (current, peak int64, err error) {
	m, err := p.Memory()
	return m.RSS, m.Peak, err
}

// CPUTime is the user and system CPU time the running process has used (/proc/<pid>/stat).
func (p *Process) CPUTime() (time.Duration, error) {
	cmd, exited := p.current()
	if cmd == nil || isClosed(exited) {
		return 0, fmt.Errorf("%s is not running", p.Name)
	}
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis
	// start at field 3, so utime and stime (14 and 15) are the 12th and 13th.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", cmd.Process.Pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux platform Go
// supports.
const clockTicks = 100

// PeakRSS is the highest resident set size of every process started so far: the running one's
// VmHWM and the peak (from wait4's rusage) of each that ended, however it ended.
func (p *Process) PeakRSS() int64 {
	_, peak, _ := p.RSS()
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(peak, p.peakRSS)
}

// Metrics scrapes the operator's /metrics.
func (p *Process) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.MetricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := probeClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", p.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: HTTP %d", p.Name, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", p.Name, err)
	}
	return families, nil
}

// MetricSum scrapes the operator and adds up the counter or gauge family name over the series
// whose labels include every pair of match (0 when the family is absent).
func (p *Process) MetricSum(ctx context.Context, name string, match map[string]string) (float64, error) {
	families, err := p.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return Sum(families, name, match), nil
}

// Sum adds up the counter, gauge or untyped family name in families over the series whose labels
// include every pair of match; for a histogram it adds up the sample counts.
func Sum(families map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	f, ok := families[name]
	if !ok {
		return 0
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if !testenv.HasLabels(m, match) {
			continue
		}
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue() +
			float64(m.GetHistogram().GetSampleCount())
	}
	return sum
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
