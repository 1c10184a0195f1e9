// Package selfsigned makes self-signed certificates: a serving one (the manager's certificate for
// `make dev`, the tests' TLS servers) and a client one (kube-apiserver's to the real node's
// kubelets).
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Generate returns a self-signed ECDSA P-256 serving certificate named cn for names and ips,
// valid for 30 days from an hour before now, and its key, both PEM. The certificate is its own
// CA: a client trusts it by adding it to its roots.
func Generate(now time.Time, cn string, names []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	return generate(now, cn, x509.ExtKeyUsageServerAuth, func(tmpl *x509.Certificate) {
		tmpl.DNSNames, tmpl.IPAddresses = names, ips
	})
}

// GenerateClient returns a self-signed ECDSA P-256 client certificate for the user cn (in the
// group org, when given), valid like Generate's, and its key, both PEM. It is its own CA: a server
// accepts it by trusting it as a client CA.
func GenerateClient(now time.Time, cn, org string) (certPEM, keyPEM []byte, err error) {
	return generate(now, cn, x509.ExtKeyUsageClientAuth, func(tmpl *x509.Certificate) {
		if org != "" {
			tmpl.Subject.Organization = []string{org}
		}
	})
}

func generate(now time.Time, cn string, usage x509.ExtKeyUsage, with func(*x509.Certificate)) (certPEM, keyPEM []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	with(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the certificate %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
