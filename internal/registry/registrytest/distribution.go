package registrytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// distributionBinary is the Debian package's name for the distribution registry binary.
const distributionBinary = "docker-registry"

// Registry is a running distribution registry.
type Registry struct {
	// Host is the registry's address, 127.0.0.1:<port> (or WithListenIP's address), as used in image references.
	Host string
	// URL is http://<Host>, or https://<Host> when started WithTLS.
	URL string
	// CACert is the PEM certificate the registry serves when started WithTLS (its own CA: a
	// client trusts the registry by adding it to its roots).
	CACert []byte
	// Username and Password are the htpasswd credentials, set when started WithBasicAuth.
	Username, Password string
	// LogPath is the registry's log file; it is kept after the test only when the test failed.
	LogPath string
	// DataDir is the registry's filesystem storage.
	DataDir string
}

// Repository returns the reference of the repository at path in this registry, e.g.
// 127.0.0.1:5000/org/bundle.
func (r *Registry) Repository(path string) string { return r.Host + "/" + path }

// Option configures StartDistribution.
type Option func(*distributionConfig)

type distributionConfig struct {
	username, password string
	ip                 net.IP
	tls                bool
}

// WithBasicAuth makes the registry require Basic authentication with username and password
// (htpasswd with a bcrypt hash, as distribution requires).
func WithBasicAuth(username, password string) Option {
	return func(c *distributionConfig) { c.username, c.password = username, password }
}

// WithListenIP makes the registry listen on ip instead of 127.0.0.1: an address of this machine
// that pods reach too, such as a real node's gateway (controlplane.RealNode.Gateway).
func WithListenIP(ip net.IP) Option {
	return func(c *distributionConfig) { c.ip = ip }
}

// WithTLS makes the registry serve HTTPS only, with a self-signed certificate for its address
// (Registry.CACert), valid for 30 days.
func WithTLS() Option {
	return func(c *distributionConfig) { c.tls = true }
}

// StartDistribution runs the distribution registry (the docker-registry binary from PATH or
// /usr/bin) with filesystem storage in a temporary directory, listening on a free loopback port
// (or on WithListenIP's address),
// waits until it answers /v2/, and stops it when the test ends. It fails the test when the
// binary is missing: install it with `apt-get install docker-registry`.
func StartDistribution(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	var cfg distributionConfig
	for _, o := range opts {
		o(&cfg)
	}
	bin := findDistributionBinary(t)

	dir := t.TempDir()
	logDir, err := os.MkdirTemp("", "registrytest-log-*")
	if err != nil {
		t.Fatalf("registrytest: creating the log directory: %v", err)
	}
	reg := &Registry{
		Username: cfg.username,
		Password: cfg.password,
		LogPath:  filepath.Join(logDir, "registry.log"),
		DataDir:  filepath.Join(dir, "data"),
	}
	htpasswd := ""
	if cfg.username != "" {
		htpasswd = filepath.Join(dir, "htpasswd")
		writeHTPasswd(t, htpasswd, cfg.username, cfg.password)
	}

	// A port picked by listening and closing can be taken by someone else before the registry
	// binds it; try a few times.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		host := freeAddrOn(t, cfg.ip)
		tlsFiles := ""
		if cfg.tls {
			reg.CACert, tlsFiles = writeServingCert(t, dir, host)
		}
		configPath := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(configPath, []byte(distributionConfigYAML(host, reg.DataDir, htpasswd, tlsFiles)), 0o600); err != nil {
			t.Fatalf("registrytest: writing the registry config: %v", err)
		}
		stop, err := runDistribution(bin, configPath, host, reg.LogPath, reg.CACert)
		if err != nil {
			lastErr = err
			continue
		}
		reg.Host, reg.URL = host, scheme(cfg.tls)+"://"+host
		t.Cleanup(func() {
			stop()
			if t.Failed() {
				t.Logf("registrytest: registry log kept at %s", reg.LogPath)
				return
			}
			_ = os.RemoveAll(logDir)
		})
		return reg
	}
	t.Fatalf("registrytest: starting %s failed: %v\n%s", bin, lastErr, logTail(reg.LogPath))
	return nil
}

func findDistributionBinary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath(distributionBinary); err == nil {
		return p
	}
	p := filepath.Join("/usr/bin", distributionBinary)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p
	}
	t.Fatalf("registrytest: %s not found in PATH or /usr/bin: install docker-registry (apt): apt-get install -y docker-registry", distributionBinary)
	return ""
}

// freeAddrOn is a free TCP address on ip, 127.0.0.1 when ip is nil.
func freeAddrOn(t testing.TB, ip net.IP) string {
	t.Helper()
	if ip == nil {
		ip = net.IPv4(127, 0, 0, 1)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatalf("registrytest: finding a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func writeHTPasswd(t testing.TB, path, username, password string) {
	t.Helper()
	if strings.ContainsAny(username, ":\n") {
		t.Fatalf("registrytest: htpasswd user name %q must not contain ':' or a line break", username)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatalf("registrytest: hashing the htpasswd password: %v", err)
	}
	if err := os.WriteFile(path, []byte(username+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatalf("registrytest: writing htpasswd: %v", err)
	}
}

// writeServingCert writes a self-signed certificate for host's IP and its key into dir as
// tls.crt and tls.key, and returns the certificate and dir's path prefix for the two files.
func writeServingCert(t testing.TB, dir, host string) (certPEM []byte, files string) {
	t.Helper()
	ip, _, err := net.SplitHostPort(host)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	certPEM, keyPEM, err := selfsigned.Generate(time.Now(), "registrytest", nil, []net.IP{net.ParseIP(ip)})
	if err != nil {
		t.Fatalf("registrytest: making the serving certificate: %v", err)
	}
	files = filepath.Join(dir, "tls")
	if err := os.WriteFile(files+".crt", certPEM, 0o600); err != nil {
		t.Fatalf("registrytest: writing the certificate: %v", err)
	}
	if err := os.WriteFile(files+".key", keyPEM, 0o600); err != nil {
		t.Fatalf("registrytest: writing the key: %v", err)
	}
	return certPEM, files
}

func scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}

// distributionConfigYAML is a distribution 2.8 configuration for one test registry; tlsFiles,
// when set, is the path of tls.crt and tls.key without the extension.
func distributionConfigYAML(addr, dataDir, htpasswd, tlsFiles string) string {
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	var b strings.Builder
	fmt.Fprintf(&b, `version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %q
  secret: %q
  headers:
    X-Content-Type-Options: [nosniff]
`, dataDir, addr, hex.EncodeToString(secret))
	if tlsFiles != "" {
		fmt.Fprintf(&b, `  tls:
    certificate: %q
    key: %q
`, tlsFiles+".crt", tlsFiles+".key")
	}
	if htpasswd != "" {
		fmt.Fprintf(&b, `auth:
  htpasswd:
    realm: registrytest
    path: %q
`, htpasswd)
	}
	return b.String()
}

// runDistribution starts the registry and waits until it answers (over TLS verified with caPEM
// when it is set); stop ends it.
func runDistribution(bin, configPath, host, logPath string, caPEM []byte) (stop func(), err error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = registryFreeEnv()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		_ = logFile.Close()
		close(exited)
	}()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	if caPEM != nil {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, scheme(caPEM != nil)+"://"+host+"/v2/", nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return stop, nil
			}
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("registry exited before answering: %w", waitErr)
		case <-ctx.Done():
			stop()
			return nil, errors.New("registry did not answer /v2/ within 30s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// registryFreeEnv is the environment without REGISTRY_* variables, which would override the
// generated configuration.
func registryFreeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REGISTRY_") {
			env = append(env, kv)
		}
	}
	return env
}

// logTail returns the end of a log file for failure messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(bytes.TrimSpace(b))
}
