package managertest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// Certificate is the self-signed serving certificate every manager of the test binary serves
// (for localhost and 127.0.0.1): made once, so a browser started before any manager can be told
// to trust it alone (chromium.SPKIHash of CertPEM).
type Certificate struct {
	CertPEM, KeyPEM []byte
	// Pool holds the certificate, for clients that trust it.
	Pool *x509.CertPool
}

var (
	certOnce sync.Once
	certVal  *Certificate
	certErr  error
)

// TestCertificate returns the test binary's serving certificate, making it on first use.
func TestCertificate() (*Certificate, error) {
	certOnce.Do(func() { certVal, certErr = newCertificate() })
	return certVal, certErr
}

func newCertificate() (*Certificate, error) {
	certPEM, keyPEM, err := selfsigned.Generate(time.Now(), "slipway manager (managertest)", []string{"localhost"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("managertest: the generated certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &Certificate{CertPEM: certPEM, KeyPEM: keyPEM, Pool: pool}, nil
}

// httpClient is a client trusting pool (nil: the system's roots).
func httpClient(pool *x509.CertPool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: time.Minute}
}
