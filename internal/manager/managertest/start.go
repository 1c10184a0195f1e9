package managertest

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// The serve flags of every harness manager besides the address, database and TLS: checks every
// few seconds, so health, drift and new versions show within seconds; a clock skew of one second
// (one machine), so a short-lived token is refused soon after it expires; BlueGreen watches green
// for 6 s after its switch (a flag of the manager, not a field of the request a test could shorten).
var serveFlags = []string{
	"--metrics-address=0",
	"--jwt-leeway=1s",
	"--cluster-health-interval=3s",
	"--operator-health-interval=2s",
	"--operator-refresh-interval=5s",
	"--install-timeout=2m",
	"--switch-monitor=6s",
	"--log-format=text",
}

// tokenTTL is how long the users' tokens are valid.
const tokenTTL = 12 * time.Hour

// start builds and starts the manager, then seeds it (seed.go). Its parts end with l.
func start(l *life, opts Options) (*Manager, error) {
	l.Helper()
	if len(opts.Clusters) == 0 {
		opts.Clusters = DefaultClusters
	}
	if len(opts.Charts) == 0 {
		opts.Charts = DefaultCharts()
	}
	m := &Manager{Operator: opts.Operator, Log: &testenv.SyncBuffer{}, dir: l.TempDir(),
		bin: operatorproc.BinaryOf(l, "./cmd/manager", BinaryEnv)}
	// The test binary's fleet is sized by its first caller: never smaller than the default world,
	// so a test with one cluster running first does not starve the ones after it.
	fleet := testenv.WorkloadFleet(l, max(len(opts.Clusters), len(DefaultClusters)))
	for i, c := range opts.Clusters {
		c.Server = fleet.Servers[i]
		m.Clusters = append(m.Clusters, c)
	}
	if err := m.secrets(); err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--address=127.0.0.1:0"}, serveFlags...)
	switch opts.Engine {
	case "", "sqlite":
		args = append(args, "--database-path="+filepath.Join(m.dir, "manager.db"))
	case "postgres":
		m.env = append(m.env, "SLIPWAY_MANAGER_DATABASE_URL="+pgtest.NewDatabase(l))
	default:
		return nil, fmt.Errorf("managertest: unknown engine %q (sqlite or postgres)", opts.Engine)
	}
	tlsArgs, err := m.tls(opts.PlainHTTP)
	if err != nil {
		return nil, err
	}
	args = append(append(args, tlsArgs...), opts.Args...)
	proc, url, err := serve(m.bin, args, m.env, m.Log)
	if err != nil {
		return nil, err
	}
	m.proc, m.URL = proc, url
	l.Cleanup(proc.kill)
	m.Repo = charttest.ServeRepository(l, opts.Charts...)
	if err := m.seed(opts.Charts, !opts.NoSeed); err != nil {
		return nil, fmt.Errorf("%w\nmanager serve log (last lines):\n%s", err, m.LogTail(60))
	}
	return m, nil
}

// secrets makes the HS256 secret, the encryption key and the users' tokens, and the process
// environment that carries the first two (never flags: a flag shows in ps).
func (m *Manager) secrets() error {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	m.secret = []byte(base64.RawStdEncoding.EncodeToString(raw))
	m.env = processEnv("SLIPWAY_MANAGER_JWT_SECRET=" + string(m.secret))
	r, err := run(m.bin, m.env, "gen-key")
	if err != nil {
		return err
	}
	if r.Code != 0 {
		return fmt.Errorf("manager gen-key: exit %d: %s", r.Code, r.Stderr)
	}
	m.env = append(m.env, "SLIPWAY_MANAGER_ENCRYPTION_KEYS="+strings.TrimSpace(r.Stdout))
	m.tokens = map[string]string{}
	for user, role := range Users {
		tok, err := m.MintToken(user, tokenTTL, role)
		if err != nil {
			return err
		}
		m.tokens[user] = tok
	}
	return nil
}

// tls writes the test certificate into the manager's directory and returns its flags (plain:
// --insecure-http), and sets Client and CAFile.
func (m *Manager) tls(plain bool) ([]string, error) {
	if plain {
		m.Client = httpClient(nil)
		return []string{"--insecure-http"}, nil
	}
	cert, err := TestCertificate()
	if err != nil {
		return nil, err
	}
	m.CAFile = filepath.Join(m.dir, "tls.crt")
	key := filepath.Join(m.dir, "tls.key")
	if err := os.WriteFile(m.CAFile, cert.CertPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(key, cert.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	m.Client = httpClient(cert.Pool)
	return []string{"--tls-cert-file=" + m.CAFile, "--tls-key-file=" + key}, nil
}
