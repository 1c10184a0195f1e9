package webhookcert

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/slipway-dev/slipway/internal/testenv"
)

func TestServer_WaitsForTheCertificateThenReloadsWithoutRestart(t *testing.T) {
	_, p, _ := net.SplitHostPort(testenv.FreeAddr(t))
	port, _ := strconv.Atoi(p)
	dir := t.TempDir()
	srv := NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	if srv.Registered() {
		t.Fatal("registered before any webhook")
	}
	srv.Register("/ok", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	if !srv.Registered() {
		t.Fatal("not registered after Register")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}()

	check := srv.StartedChecker()
	if err := check(nil); err == nil || !strings.Contains(err.Error(), "waiting for the webhook serving certificate") {
		t.Fatalf("readiness before the certificate = %v, want waiting", err)
	}
	ca := mustCA(t, time.Now(), 2*time.Hour)
	files, first := pairFiles(t, ca)
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the server is ready", func() (bool, error) { return check(nil) == nil, check(nil) })

	served := func() (string, error) {
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", p), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}
	if s, err := served(); err != nil || s != first.cert.SerialNumber.String() {
		t.Fatalf("served serial %s (%v), want the first", s, err)
	}
	files, second := pairFiles(t, ca)
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the server presents the second certificate", func() (bool, error) {
		s, err := served()
		return s == second.cert.SerialNumber.String(), err
	})
	select {
	case err := <-done:
		t.Fatalf("the server stopped during the reload: %v", err)
	default:
	}
}

// After it has started, the server still presents only trusted certificates: a newer pair on disk
// that is not trusted yet leaves the last trusted one in service, and when the trust moves away
// from every pair it has, handshakes fail and readiness says why, until a trusted pair arrives.
func TestServer_PresentsOnlyTrustedCertificatesAfterStart(t *testing.T) {
	_, p, _ := net.SplitHostPort(testenv.FreeAddr(t))
	port, _ := strconv.Atoi(p)
	dir := t.TempDir()
	srv := NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	srv.Register("/ok", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.requireTrust()
	a, b := mustCA(t, time.Now(), 2*time.Hour), mustCA(t, time.Now(), 2*time.Hour)
	trustOnly := func(ca *keyPair) {
		srv.setTrust(newTrust("ns/cert", &corev1.Secret{Data: map[string][]byte{KeyCA: ca.certPEM}}, nil))
	}
	trustOnly(a)
	files, fromA := pairFiles(t, a)
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}()
	check := srv.StartedChecker()
	testenv.Eventually(ctx, t, "the server is ready", func() (bool, error) { return check(nil) == nil, check(nil) })
	served := func() (string, error) {
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", p), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}

	// A pair from B on disk while only A is trusted: A's certificate stays in service.
	files, fromB := pairFiles(t, b)
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	if s, err := served(); err != nil || s != fromA.cert.SerialNumber.String() {
		t.Fatalf("served %s (%v), want A's certificate %s", s, err, fromA.cert.SerialNumber)
	}
	if err := check(nil); err != nil {
		t.Fatalf("not ready while A's certificate is served: %v", err)
	}

	// Now only C is trusted: nothing the server has may be served.
	c := mustCA(t, time.Now(), 2*time.Hour)
	trustOnly(c)
	if s, err := served(); err == nil {
		t.Fatalf("served %s while no certificate it has is trusted", s)
	}
	if err := check(nil); err == nil || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("readiness = %v, want not trusted", err)
	}

	// B becomes trusted: B's pair, already on disk, is served.
	trustOnly(b)
	testenv.Eventually(ctx, t, "B's certificate is served", func() (bool, error) {
		s, err := served()
		return s == fromB.cert.SerialNumber.String(), err
	})
	if err := check(nil); err != nil {
		t.Fatalf("not ready with B's certificate: %v", err)
	}
}
