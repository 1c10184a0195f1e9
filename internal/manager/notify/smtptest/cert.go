package smtptest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// One certificate for the test binary, so a server started again on the same address presents
// the same certificate, and a client can trust it before any server is up.
var (
	certOnce sync.Once
	certPair tls.Certificate
	certPool *x509.CertPool
	certPEM  []byte
	certErr  error
)

func testCert(t testing.TB) tls.Certificate {
	t.Helper()
	certOnce.Do(func() {
		var keyPEM []byte
		certPEM, keyPEM, certErr = selfsigned.Generate(time.Now(), "smtp test", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
		if certErr != nil {
			return
		}
		if certPair, certErr = tls.X509KeyPair(certPEM, keyPEM); certErr != nil {
			return
		}
		certPool = x509.NewCertPool()
		if !certPool.AppendCertsFromPEM(certPEM) {
			certErr = errors.New("smtptest: the test certificate does not parse")
		}
	})
	if certErr != nil {
		t.Fatalf("smtptest: making the test certificate: %v", certErr)
	}
	return certPair
}

// CertPool is a pool trusting the certificate of every Server (for 127.0.0.1 and localhost):
// a client's tls.Config.RootCAs.
func CertPool(t testing.TB) *x509.CertPool {
	t.Helper()
	testCert(t)
	return certPool
}

// CAPEM is the certificate of every Server as PEM: what a client reads as its CA file.
func CAPEM(t testing.TB) []byte {
	t.Helper()
	testCert(t)
	return certPEM
}
