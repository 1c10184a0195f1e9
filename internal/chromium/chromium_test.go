package chromium

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSPKIHash: the hash is the one chromium documents for --ignore-certificate-errors-spki-list,
// base64(SHA-256(SubjectPublicKeyInfo DER)), computed here from the key, not the certificate.
func TestSPKIHash(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	got, err := SPKIHash(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	if err != nil || got != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Errorf("SPKIHash = %q, %v; want %q", got, err, base64.StdEncoding.EncodeToString(sum[:]))
	}
	for _, bad := range []string{"", "not pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"} {
		if _, err := SPKIHash([]byte(bad)); err == nil {
			t.Errorf("SPKIHash(%q): no error", bad)
		}
	}
}

// TestPath: $SLIPWAY_CHROMIUM wins when it names a file, and is refused, naming the variable,
// when it names none.
func TestPath(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, bin)
	if p, err := Path(); p != bin || err != nil {
		t.Errorf("Path() = %q, %v; want %q", p, err, bin)
	}
	t.Setenv(Env, bin+"-missing")
	if _, err := Path(); err == nil || !strings.Contains(err.Error(), Env) {
		t.Errorf("Path() with a missing $%s: %v, want an error naming it", Env, err)
	}
}

// TestStart starts Debian's chromium and reads a page a TLS server serves with a certificate
// trusted by its public key alone; once stopped, it has left nothing in the temporary directory.
func TestStart(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><title>ok</title><p id="p">served over TLS</p>`))
	}))
	defer srv.Close()
	spki, err := SPKIHash(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	if err != nil {
		t.Fatal(err)
	}
	browser, stop, err := Start(Options{Width: 800, Height: 600, SPKIHash: spki})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#p")))
	if err != nil || text != "served over TLS" {
		t.Errorf("the page's text: %q, %v", text, err)
	}
	stop()
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("the temporary directory after stop: %v (%v), want empty", left, err)
	}
}
