package webhookcert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
)

// backdate is how far before "now" a certificate becomes valid, for clocks that lag.
const backdate = time.Hour

// keyPair is a certificate with its private key, parsed and PEM-encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// hosts are the names a serving certificate is issued for: DNS names and IP addresses.
type hosts struct {
	dns []string
	ips []net.IP
}

// newHosts splits names into DNS names and IP addresses, dropping empty and repeated entries.
// The first DNS name becomes the certificate's common name.
func newHosts(names []string) hosts {
	var h hosts
	for _, n := range names {
		if n == "" {
			continue
		}
		if ip := net.ParseIP(n); ip != nil {
			if !slices.ContainsFunc(h.ips, ip.Equal) {
				h.ips = append(h.ips, ip)
			}
			continue
		}
		if !slices.Contains(h.dns, n) {
			h.dns = append(h.dns, n)
		}
	}
	return h
}

// matches reports whether c names exactly these hosts, in any order.
func (h hosts) matches(c *x509.Certificate) bool {
	sortedIPs := func(ips []net.IP) []string {
		s := make([]string, 0, len(ips))
		for _, ip := range ips {
			s = append(s, ip.String())
		}
		slices.Sort(s)
		return s
	}
	return slices.Equal(slices.Sorted(slices.Values(h.dns)), slices.Sorted(slices.Values(c.DNSNames))) &&
		slices.Equal(sortedIPs(h.ips), sortedIPs(c.IPAddresses))
}

// newCA makes a self-signed CA valid for validity from now. Its common name carries the time, so
// the CAs of a bundle are told apart.
func newCA(now time.Time, validity time.Duration) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("slipway-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, nil)
}

// newServing makes a serving certificate for h signed by ca, valid for validity from now but
// never past the CA's own expiry.
func newServing(ca *keyPair, h hosts, now time.Time, validity time.Duration) (*keyPair, error) {
	if len(h.dns) == 0 && len(h.ips) == 0 {
		return nil, errors.New("no DNS names or IP addresses for the serving certificate")
	}
	cn := ""
	if len(h.dns) > 0 {
		cn = h.dns[0]
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    h.dns,
		IPAddresses: h.ips,
		NotBefore:   now.Add(-backdate),
		NotAfter:    minTime(now.Add(validity), ca.cert.NotAfter),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return sign(tmpl, ca)
}

// sign creates a P-256 key and a certificate for tmpl, signed by parent or self-signed when
// parent is nil. The serial number is left to crypto/x509, which draws a random RFC 5280 one.
func sign(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	issuer, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("creating certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the new certificate: %w", err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parseKeyPair parses a PEM certificate (the first of the chain) and its matching key.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", pair.PrivateKey)
	}
	return &keyPair{cert: pair.Leaf, key: signer, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// parseCerts returns the certificates of a PEM bundle, skipping blocks that are not certificates
// or do not parse.
func parseCerts(data []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return certs
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			certs = append(certs, c)
		}
	}
}

// encodeCerts PEM-encodes certs in order.
func encodeCerts(certs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return buf.Bytes()
}

// containsCert reports whether certs holds c (byte for byte).
func containsCert(certs []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(certs, func(x *x509.Certificate) bool { return bytes.Equal(x.Raw, c.Raw) })
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
