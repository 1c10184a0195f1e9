//go:build e2e

package main_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/auth"
)

// engines are the store engines every command test runs on.
var engines = []string{"sqlite", "postgres"}

// Without certificate files serve refuses to start, naming the flags; with files it speaks TLS
// 1.2 and newer only; /health answers without a token, the API not.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, "sqlite")

	_, err := d.startServe()
	var exit *exitError
	if !errors.As(err, &exit) {
		t.Fatalf("serve without TLS files: %v, want it to exit", err)
	}
	const want = "no TLS certificate: pass --tls-cert-file and --tls-key-file (or --insecure-http behind a TLS proxy)"
	if !strings.Contains(exit.log, want) {
		t.Fatalf("serve without TLS files said %q, want %q", exit.log, want)
	}

	certFile, keyFile, pool := selfSigned(t)
	p := d.serve("--tls-cert-file="+certFile, "--tls-key-file="+keyFile)
	if !strings.HasPrefix(p.URL, "https://") {
		t.Fatalf("serving %s, want https", p.URL)
	}
	dial := func(minV, maxV uint16) error {
		addr := strings.TrimPrefix(p.URL, "https://")
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, MinVersion: minV, MaxVersion: maxV, ServerName: "127.0.0.1"})
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	if err := dial(tls.VersionTLS10, tls.VersionTLS11); err == nil {
		t.Fatal("a TLS 1.1 client was accepted")
	}
	if err := dial(tls.VersionTLS12, tls.VersionTLS12); err != nil {
		t.Fatalf("a TLS 1.2 client was refused: %v", err)
	}
	p.client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}}}
	checkHealthAndAuth(t, p, "sqlite")
}

// The plain-HTTP mode on both engines: health without a token, 401 without one on the API.
func TestServeInsecureHTTP(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			d := newDeployment(t, engine)
			p := d.serve("--insecure-http")
			if !strings.HasPrefix(p.URL, "http://") {
				t.Fatalf("serving %s, want http", p.URL)
			}
			checkHealthAndAuth(t, p, engine)
			p.Stop()
		})
	}
}

func checkHealthAndAuth(t *testing.T, p *proc, engine string) {
	t.Helper()
	var h struct{ Status, Database, Engine string }
	if err := json.Unmarshal(p.must("GET", "/health", "", nil, http.StatusOK).body, &h); err != nil {
		t.Fatal(err)
	}
	if h.Status != "ok" || h.Database != "ok" || h.Engine != engine {
		t.Fatalf("GET /health = %+v, want ok/ok/%s", h, engine)
	}
	r := p.must("GET", "/api/v1/operators", "", nil, http.StatusUnauthorized)
	var e struct{ Code, Message string }
	if err := json.Unmarshal(r.body, &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("401 body is not the error shape: %s", r.body)
	}
	p.must("GET", "/api/v1/operators", p.d.token("victor", auth.Viewer), nil, http.StatusOK)
}

// migrate, then serve --migrate=false, works; serve --migrate=false on an empty database refuses
// and says to run manager migrate.
func TestMigrateThenServe(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			d := newDeployment(t, engine)
			_, err := d.startServe("--insecure-http", "--migrate=false")
			var exit *exitError
			if !errors.As(err, &exit) {
				t.Fatalf("serve --migrate=false on an empty database: %v, want it to exit", err)
			}
			if !strings.Contains(exit.log, "run `manager migrate`") {
				t.Fatalf("serve --migrate=false on an empty database said %q, want it to name manager migrate", exit.log)
			}
			if r := d.run("migrate"); r.code != 0 || !strings.Contains(r.stdout, "database is up to date") {
				t.Fatalf("manager migrate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if r := d.run("migrate"); r.code != 0 {
				t.Fatalf("manager migrate a second time: exit %d, stderr %q", r.code, r.stderr)
			}
			p := d.serve("--insecure-http", "--migrate=false")
			p.must("GET", "/api/v1/clusters", d.admin(), nil, http.StatusOK)
		})
	}
}

// Two replicas started at the same moment on one empty PostgreSQL database both come up: the
// advisory lock serializes their migrations.
func TestServeTwoReplicasMigrateTogether(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, "postgres")
	const replicas = 3
	procs := make([]*proc, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { procs[i], errs[i] = d.startServe("--insecure-http") })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	for _, p := range procs {
		p.must("GET", "/api/v1/operators", d.admin(), nil, http.StatusOK)
	}
}

// manager token mints a token that the server takes for the roles it names.
func TestTokenCommand(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, "sqlite")
	p := d.serve("--insecure-http")
	mint := func(args ...string) string {
		t.Helper()
		r := d.run(append([]string{"token"}, args...)...)
		if r.code != 0 {
			t.Fatalf("manager token %v: exit %d: %s", args, r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	admin := mint("--role", "Admin", "--subject", "alice")
	viewer := mint("--role", "Viewer", "--subject", "victor")
	p.must("GET", "/api/v1/audit", admin, nil, http.StatusOK)
	p.must("GET", "/api/v1/audit", viewer, nil, http.StatusForbidden)
	p.must("GET", "/api/v1/operators", viewer, nil, http.StatusOK)

	// The subject is who the audit log names.
	p.must("POST", "/api/v1/clusters", admin, []byte(`{"name":"x"}`), http.StatusBadRequest)
	var audit struct {
		Items []struct{ Actor, Action string }
	}
	if err := json.Unmarshal(p.must("GET", "/api/v1/audit", admin, nil, http.StatusOK).body, &audit); err != nil {
		t.Fatal(err)
	}
	if len(audit.Items) == 0 || audit.Items[0].Actor != "alice" {
		t.Fatalf("audit log %+v, want alice's cluster.create first", audit.Items)
	}

	for _, bad := range [][]string{{"--subject", "alice"}, {"--role", "Admin"}, {"--role", "Root", "--subject", "alice"}} {
		if r := d.run(append([]string{"token"}, bad...)...); r.code == 0 || strings.TrimSpace(r.stderr) == "" {
			t.Errorf("manager token %v: exit %d, stderr %q; want a failure with a message", bad, r.code, r.stderr)
		}
	}
	noSecret := *d
	noSecret.secret = nil
	if r := noSecret.run("token", "--role", "Admin", "--subject", "alice"); r.code == 0 || !strings.Contains(r.stderr, "SLIPWAY_MANAGER_JWT_SECRET") {
		t.Errorf("manager token without a secret: exit %d, stderr %q; want a failure naming the variable", r.code, r.stderr)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key, and returns their files
// and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "manager test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
