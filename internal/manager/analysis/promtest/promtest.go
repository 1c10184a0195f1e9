// Package promtest runs a real Prometheus server for tests: Debian's `prometheus` (/usr/bin, or
// $PROMTEST_BIN), started per test with its own config and data dir in a temp dir, listening on a
// free loopback port and scraping the exporters the test runs (see Exporter and Controller) every
// ScrapeInterval. Start waits until the server is ready and every target is up, and stops it at the
// test's end (SIGTERM, then SIGKILL to its process group; a parent-death signal kills it with the
// test binary), removing its files.
//
// Options.BasicAuth and Options.TLS put Prometheus's own web config (--web.config.file: bcrypt
// basic_auth_users, tls_server_config) in front of its API, so clients' auth and CA handling are
// tested against Prometheus itself. Prometheus 2.42 has no bearer-token check of its own;
// BearerProxy puts a reverse proxy that checks the header in front of a server.
//
// A missing Prometheus is a test failure naming the Debian package and `make deps`, never a skip.
package promtest

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/procid"
	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// BinEnv names another prometheus binary.
const BinEnv = "PROMTEST_BIN"

// Target is an exporter Prometheus scrapes: host:port serving /metrics, and the labels Prometheus
// attaches to its series (a namespace, as a Kubernetes service discovery would).
type Target struct {
	Addr   string
	Labels map[string]string
}

// Options configure a server.
type Options struct {
	// Targets are scraped in one job, "exporters".
	Targets []Target
	// ScrapeInterval is how often the targets are scraped (and rules evaluated); default 1s.
	ScrapeInterval time.Duration
	// BasicAuth, when set, makes Prometheus require these user → password pairs.
	BasicAuth map[string]string
	// TLS makes Prometheus serve HTTPS with a self-signed certificate (Server.CAPEM trusts it).
	TLS bool
}

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL (http or https on 127.0.0.1).
	URL string
	// CAPEM is the certificate that signs its serving certificate, with Options.TLS.
	CAPEM []byte
	// Dir holds its config, web config, data dir and log (prometheus.log).
	Dir string

	opts  Options
	cmd   *exec.Cmd
	child *procid.Child
}

// Bin is the prometheus binary: $PROMTEST_BIN, else the one in PATH or /usr/bin.
func Bin() (string, error) {
	if b := os.Getenv(BinEnv); b != "" {
		return b, nil
	}
	if b, err := exec.LookPath("prometheus"); err == nil {
		return b, nil
	}
	if _, err := os.Stat("/usr/bin/prometheus"); err == nil {
		return "/usr/bin/prometheus", nil
	}
	return "", errors.New("no prometheus binary: install the Debian package `prometheus` (`make deps`), or name one in $" + BinEnv)
}

// Start starts a server for opts and waits until it is ready and every target has been scraped
// successfully; the server is stopped and its files removed when tb's test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.ScrapeInterval == 0 {
		opts.ScrapeInterval = time.Second
	}
	s := &Server{Dir: tb.TempDir(), opts: opts}
	var err error
	// A free port can be taken between choosing and binding it: try a few.
	for attempt := 0; attempt < 3; attempt++ {
		if err = s.start(); err == nil {
			break
		}
		s.stop()
	}
	if err != nil {
		tb.Fatalf("promtest: %v", err)
	}
	tb.Cleanup(s.stop)
	if err := s.waitTargetsUp(60 * time.Second); err != nil {
		tb.Fatalf("promtest: %v", err)
	}
	return s
}

func (s *Server) start() error {
	bin, err := Bin()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args, err := s.writeConfig(addr)
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(s.Dir, "prometheus.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	s.cmd, s.child = cmd, procid.Watch(cmd)
	scheme := "http"
	if s.opts.TLS {
		scheme = "https"
	}
	s.URL = scheme + "://" + addr
	return s.waitReady(60 * time.Second)
}

// writeConfig writes prometheus.yml (and web.yml, the certificate and key when asked) and
// returns the command line.
func (s *Server) writeConfig(addr string) ([]string, error) {
	var targets []any
	for _, t := range s.opts.Targets {
		targets = append(targets, map[string]any{"targets": []string{t.Addr}, "labels": t.Labels})
	}
	iv := s.opts.ScrapeInterval.String()
	cfg := map[string]any{
		"global": map[string]any{"scrape_interval": iv, "evaluation_interval": iv, "scrape_timeout": iv},
		"scrape_configs": []any{map[string]any{
			"job_name": "exporters", "static_configs": targets,
		}},
	}
	cfgPath := filepath.Join(s.Dir, "prometheus.yml")
	if err := writeYAML(cfgPath, cfg); err != nil {
		return nil, err
	}
	args := []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(s.Dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}
	web, err := s.webConfig()
	if err != nil || web == nil {
		return args, err
	}
	webPath := filepath.Join(s.Dir, "web.yml")
	if err := writeYAML(webPath, web); err != nil {
		return nil, err
	}
	return append(args, "--web.config.file="+webPath), nil
}

// webConfig is Prometheus's --web.config.file content for the options, nil without auth or TLS.
func (s *Server) webConfig() (map[string]any, error) {
	web := map[string]any{}
	if len(s.opts.BasicAuth) > 0 {
		users := map[string]string{}
		for u, p := range s.opts.BasicAuth {
			// The minimum cost: the server checks the hash on every request.
			h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
			if err != nil {
				return nil, err
			}
			users[u] = string(h)
		}
		web["basic_auth_users"] = users
	}
	if s.opts.TLS {
		if s.CAPEM == nil {
			cert, key, err := selfsigned.Generate(time.Now(), "promtest", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
			if err != nil {
				return nil, err
			}
			s.CAPEM = cert
			if err := os.WriteFile(filepath.Join(s.Dir, "tls.crt"), cert, 0o600); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(s.Dir, "tls.key"), key, 0o600); err != nil {
				return nil, err
			}
		}
		web["tls_server_config"] = map[string]any{
			"cert_file": filepath.Join(s.Dir, "tls.crt"), "key_file": filepath.Join(s.Dir, "tls.key"),
		}
	}
	if len(web) == 0 {
		return nil, nil
	}
	return web, nil
}

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Client is an HTTP client that trusts the server's certificate and sends its basic-auth
// credentials (the first user of Options.BasicAuth), for the harness's own requests.
func (s *Server) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.CAPEM != nil {
		tr.TLSClientConfig = tlsTrusting(s.CAPEM)
	}
	var rt http.RoundTripper = tr
	for u, p := range s.opts.BasicAuth {
		rt = basicAuth{u, p, tr}
		break
	}
	return &http.Client{Transport: rt, Timeout: 5 * time.Second}
}

type basicAuth struct {
	user, pass string
	next       http.RoundTripper
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.pass)
	return b.next.RoundTrip(r)
}

// waitReady polls /-/ready until it answers 200, failing early when the process exits.
func (s *Server) waitReady(timeout time.Duration) error {
	c := s.Client()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := c.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/-/ready: %s", resp.Status)
		}
		select {
		case <-s.child.Done():
			return fmt.Errorf("prometheus exited at start: %s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready in %s: %w; log: %s", timeout, err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitTargetsUp waits until Prometheus has scraped every target successfully (up == 1).
func (s *Server) waitTargetsUp(timeout time.Duration) error {
	want := len(s.opts.Targets)
	if want == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		n, err := s.countUp()
		if err == nil && n == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d targets up after %s (%w); log: %s", n, want, timeout, err, s.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// countUp asks the server itself how many targets are up.
func (s *Server) countUp() (int, error) {
	resp, err := s.Client().Get(s.URL + "/api/v1/query?query=" + url.QueryEscape(`count(up{job="exporters"} == 1)`))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := decodeJSON(resp, &body); err != nil {
		return 0, err
	}
	if len(body.Data.Result) == 0 {
		return 0, nil
	}
	v, _ := body.Data.Result[0].Value[1].(string)
	return strconv.Atoi(v)
}

// Log is the tail of the server's log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "prometheus.log"))
	t := strings.TrimSpace(string(b))
	if len(t) > 2000 {
		t = "…" + t[len(t)-2000:]
	}
	return t
}

// stop ends the server: SIGTERM (a clean TSDB close), then SIGKILL to what is left of its group.
func (s *Server) stop() {
	if s.child == nil {
		return
	}
	_ = s.child.SignalGroup(syscall.SIGTERM)
	select {
	case <-s.child.Done():
	case <-time.After(10 * time.Second):
		_ = s.child.SignalGroup(syscall.SIGKILL)
		<-s.child.Done()
	}
	s.child = nil
}

// Exited reports whether the server process has ended (for the harness's own test).
func (s *Server) Exited() bool {
	if s.child == nil {
		return true
	}
	select {
	case <-s.child.Done():
		return true
	default:
		return false
	}
}

// Stop stops the server now, before the test's end.
func (s *Server) Stop() { s.stop() }

// Pid is the server's process ID while it runs.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// BearerProxy starts a reverse proxy in front of s that forwards only requests carrying
// "Authorization: Bearer token" (answering 401 otherwise), the way a Prometheus behind an
// authenticating proxy is reached. The proxy serves TLS with its own certificate; its URL and
// CA (PEM) are returned. It stops at the test's end.
func (s *Server) BearerProxy(tb testing.TB, token string) (proxyURL string, caPEM []byte) {
	tb.Helper()
	target, err := url.Parse(s.URL)
	if err != nil {
		tb.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = s.Client().Transport
	want := []byte("Bearer " + token)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		rp.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv.URL, certPEM(srv)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
