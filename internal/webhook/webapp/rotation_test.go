package webapp_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestWebhooks_CertificatesRotateWithoutRestart runs the operator with lifetimes short enough
// that the serving certificate (every ~7 s) and the CA (every ~20 s) rotate during the test. The
// same manager keeps serving: the server presents new certificates without a restart, every
// certificate it presents verifies against the CA bundle injected into every webhook, and the
// API server keeps calling the webhooks through both rotations.
func TestWebhooks_CertificatesRotateWithoutRestart(t *testing.T) {
	r := startOperator(t, "rotation", operator.WebhookCertOptions{
		CAValidity: 30 * time.Second, CertValidity: 12 * time.Second, RotateBefore: 5 * time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := namespace(ctx, t)

	first, err := verifyServed(ctx, r)
	if err != nil {
		t.Fatalf("the served certificate does not verify against the injected bundle: %v", err)
	}
	// served polls the certificate; one that does not verify fails the test at once, whenever
	// during the rotations it shows up.
	served := func() *x509.Certificate {
		cert, err := verifyServed(ctx, r)
		if err != nil {
			t.Fatalf("the served certificate does not verify against the injected bundle: %v", err)
		}
		return cert
	}

	testenv.Eventually(ctx, t, "the server presents a new serving certificate", func() (bool, error) {
		cert := served()
		return cert.SerialNumber.Cmp(first.SerialNumber) != 0, fmt.Errorf("still serial %x", cert.SerialNumber)
	})
	admits(ctx, t, ns, "after the serving certificate rotated")

	testenv.Eventually(ctx, t, "the server presents a certificate from a new CA", func() (bool, error) {
		cert := served()
		return !bytes.Equal(cert.AuthorityKeyId, first.AuthorityKeyId), fmt.Errorf("still issued by %s", cert.Issuer)
	})
	admits(ctx, t, ns, "after the CA rotated")

	select {
	case err := <-r.done:
		t.Fatalf("the manager stopped during the rotations: %v", err)
	default:
	}
}

// admits checks that the API server calls both webhooks: a WebApp gets its labels, a bad one
// is refused by the validator.
func admits(ctx context.Context, t *testing.T, ns, when string) {
	t.Helper()
	w := webApp(ns, "", func(w *webappv1.WebApp) { w.GenerateName = "rotated-" })
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatalf("%s: create refused: %v", when, err)
	}
	if w.Labels[operator.ManagedByLabel] != operator.ManagedByValue {
		t.Errorf("%s: the mutating webhook did not label the WebApp: %v", when, w.Labels)
	}
	err := env.Client.Create(ctx, webApp(ns, "rotated-bad", image("nginx")))
	wantRefused(t, err, []string{"spec.image"}, byWebhook)
}
