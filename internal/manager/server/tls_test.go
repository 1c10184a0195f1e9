package server

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// writeCert writes a self-signed certificate named cn and its key into dir.
func writeCert(t *testing.T, dir, cn string) (string, string) {
	t.Helper()
	certPEM, keyPEM, err := selfsigned.Generate(time.Now(), cn, []string{cn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestTLSConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir, "one")
	cfg, err := TLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("MinVersion %x", cfg.MinVersion)
	}
	served := func() string {
		c, err := cfg.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if served() != "one" {
		t.Fatal("first certificate not served")
	}
	// A renewal (new files, new mtime) is served without a restart.
	time.Sleep(10 * time.Millisecond)
	writeCert(t, dir, "two")
	if s := served(); s != "two" {
		t.Fatalf("served %q after the renewal", s)
	}
	// A broken key file keeps the last good certificate.
	if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := served(); s != "two" {
		t.Fatalf("served %q with a broken key file", s)
	}
	if _, err := TLSConfig(filepath.Join(dir, "missing.crt"), keyFile); err == nil {
		t.Fatal("a missing certificate was accepted")
	}
}
