package webhookcert

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// A second `make dev-up` starts a new control plane (a new CA) over the cert dir the previous run's
// mirror wrote. Whenever the server reports ready, the certificate it presents must be one the
// webhook configurations trust: never the previous run's. Another replica holds the leader lease
// at first, so for as long as the test needs there is no Secret, only the stale files.
func TestServer_StaleCertDirFromAnotherCAIsNeverServed(t *testing.T) {
	m := newManaged(t, "mirror")
	stale := m.writeStale(t)
	release := m.holdLease(t)
	m.start(t, true)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// readyAndTrusted fails the test when the server is ready with a certificate the
	// configurations do not trust.
	readyAndTrusted := func() (bool, error) {
		if err := m.ready(); err != nil {
			return false, err
		}
		cert, err := m.served()
		if err != nil {
			t.Fatalf("ready, but no TLS handshake: %v", err)
		}
		if err := m.verifyTrusted(ctx, cert); err != nil {
			t.Fatalf("ready while presenting a certificate the configurations do not trust (serial %s, the stale one is %s): %v",
				cert.SerialNumber.Text(16), stale.cert.SerialNumber.Text(16), err)
		}
		return true, nil
	}
	testenv.Eventually(ctx, t, "readiness says the Secret does not exist yet", func() (bool, error) {
		if ready, err := readyAndTrusted(); ready || !errContains(err, "does not exist yet") {
			return false, err
		}
		return true, nil
	})
	release()
	testenv.Eventually(ctx, t, "the server is ready with a certificate every webhook trusts", readyAndTrusted)
}

// In a cluster the cert dir is the mounted Secret: a pod restarted with an old mounted
// certificate (the Secret changed, the kubelet has not updated the volume yet) must not serve it
// and must not be ready, until the volume holds the Secret's pair.
func TestServer_RefusesAMountedCertificateTheConfigurationsDoNotTrust(t *testing.T) {
	m := newManaged(t, "mounted")
	stale := m.writeStale(t)
	m.start(t, false)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var pair map[string][]byte
	testenv.Eventually(ctx, t, "the Secret holds a pair from a CA every webhook trusts", func() (bool, error) {
		var err error
		if pair, err = m.secretPair(ctx); err != nil {
			return false, err
		}
		kp, err := parseKeyPair(pair[KeyCert], pair[KeyKey])
		if err != nil {
			return false, err
		}
		return m.verifyTrusted(ctx, kp.cert) == nil, m.verifyTrusted(ctx, kp.cert)
	})
	refused, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	testenv.Eventually(refused, t, "readiness says the certificate on disk is not trusted", func() (bool, error) {
		err := m.ready()
		return errContains(err, "not trusted"), err
	})
	if cert, err := m.served(); err == nil {
		t.Fatalf("served certificate %s (the stale one is %s) while it is not trusted",
			cert.SerialNumber.Text(16), stale.cert.SerialNumber.Text(16))
	}

	// The kubelet brings the volume up to date.
	if err := writeFiles(m.certDir, pair); err != nil {
		t.Fatal(err)
	}
	want, err := parseKeyPair(pair[KeyCert], pair[KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the server is ready and presents the Secret's certificate", func() (bool, error) {
		if err := m.ready(); err != nil {
			return false, err
		}
		cert, err := m.served()
		if err != nil {
			return false, err
		}
		return sameCert(cert, want.cert), m.verifyTrusted(ctx, cert)
	})
}

func sameCert(a, b *x509.Certificate) bool { return a.Equal(b) }
