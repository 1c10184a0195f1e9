package webhookcert

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func mustCA(t *testing.T, now time.Time, validity time.Duration) *keyPair {
	t.Helper()
	ca, err := newCA(now, validity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustServing(t *testing.T, ca *keyPair, h hosts, now time.Time, validity time.Duration) *keyPair {
	t.Helper()
	s, err := newServing(ca, h, now, validity)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewServing_VerifiesAgainstItsCAForEveryHost(t *testing.T) {
	ca := mustCA(t, t0, 24*time.Hour)
	h := newHosts([]string{"svc.ns.svc", "localhost", "127.0.0.1", "::1", "localhost", ""})
	s := mustServing(t, ca, h, t0, time.Hour)

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	for _, name := range []string{"svc.ns.svc", "localhost", "127.0.0.1", "::1"} {
		if _, err := s.cert.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: t0,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if s.cert.Subject.CommonName != "svc.ns.svc" {
		t.Errorf("common name %q, want the first DNS name", s.cert.Subject.CommonName)
	}
	if !h.matches(s.cert) || len(s.cert.DNSNames) != 2 || len(s.cert.IPAddresses) != 2 {
		t.Errorf("SANs %v %v, want 2 DNS names and 2 IPs without repeats", s.cert.DNSNames, s.cert.IPAddresses)
	}
	if _, err := parseKeyPair(s.certPEM, s.keyPEM); err != nil {
		t.Errorf("the PEM pair does not parse back: %v", err)
	}
}

func TestNewServing_NeverOutlivesItsCA(t *testing.T) {
	ca := mustCA(t, t0, time.Hour)
	s := mustServing(t, ca, newHosts([]string{"x"}), t0.Add(30*time.Minute), 24*time.Hour)
	if !s.cert.NotAfter.Equal(ca.cert.NotAfter) {
		t.Errorf("serving NotAfter %s, want the CA's %s", s.cert.NotAfter, ca.cert.NotAfter)
	}
}

func TestSign_SerialNumbersDiffer(t *testing.T) {
	ca := mustCA(t, t0, time.Hour)
	a := mustServing(t, ca, newHosts([]string{"x"}), t0, time.Minute)
	b := mustServing(t, ca, newHosts([]string{"x"}), t0, time.Minute)
	if a.cert.SerialNumber.Cmp(b.cert.SerialNumber) == 0 || a.cert.SerialNumber.Sign() <= 0 {
		t.Errorf("serials %s and %s: want distinct positive serials", a.cert.SerialNumber, b.cert.SerialNumber)
	}
}

func TestParseKeyPair_RefusesAMismatchedKey(t *testing.T) {
	ca := mustCA(t, t0, time.Hour)
	a := mustServing(t, ca, newHosts([]string{"x"}), t0, time.Minute)
	b := mustServing(t, ca, newHosts([]string{"x"}), t0, time.Minute)
	if _, err := parseKeyPair(a.certPEM, b.keyPEM); err == nil {
		t.Fatal("a certificate with another certificate's key parsed")
	}
}

func TestHosts_Matches(t *testing.T) {
	ca := mustCA(t, t0, time.Hour)
	s := mustServing(t, ca, newHosts([]string{"a", "b", "10.0.0.1"}), t0, time.Minute)
	tests := []struct {
		names []string
		want  bool
	}{
		{[]string{"b", "10.0.0.1", "a"}, true},
		{[]string{"a", "b"}, false},
		{[]string{"a", "b", "10.0.0.1", "localhost"}, false},
		{[]string{"a", "b", "10.0.0.2"}, false},
	}
	for _, tt := range tests {
		if got := newHosts(tt.names).matches(s.cert); got != tt.want {
			t.Errorf("matches(%v) = %v, want %v", tt.names, got, tt.want)
		}
	}
	if ip := newHosts([]string{"::ffff:10.0.0.1"}).ips[0]; !ip.Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("IPv4-mapped address parsed as %s", ip)
	}
}

func TestParseCerts_SkipsOtherBlocks(t *testing.T) {
	a, b := mustCA(t, t0, time.Hour), mustCA(t, t0, time.Hour)
	bundle := append(append(append([]byte{}, a.certPEM...), a.keyPEM...), b.certPEM...)
	got := parseCerts(append(bundle, []byte("garbage")...))
	if len(got) != 2 || !containsCert(got, a.cert) || !containsCert(got, b.cert) {
		t.Fatalf("parsed %d certificates, want the two CAs", len(got))
	}
	if again := parseCerts(encodeCerts(got)); len(again) != 2 {
		t.Errorf("round trip gave %d certificates", len(again))
	}
}
