package operator_test

import (
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/webhookcert"
)

func TestOptions_WebhookCertFlags(t *testing.T) {
	var o operator.Options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	o.BindFlags(fs, nil)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	c := o.WebhookCert
	if !c.SelfManaged || c.Mirror || c.SecretName != webhookcert.DefaultSecretName || c.ServiceName != webhookcert.DefaultServiceName ||
		c.CAValidity != webhookcert.DefaultCAValidity || c.CertValidity != webhookcert.DefaultCertValidity || c.RotateBefore != webhookcert.DefaultRotateBefore {
		t.Errorf("defaults %+v", c)
	}
	err := fs.Parse([]string{"--webhook-cert-self-managed=false", "--webhook-cert-mirror", "--webhook-cert-dns-names=localhost, 127.0.0.1,,",
		"--webhook-cert-secret=s", "--webhook-service-name=svc", "--webhook-cert-rotate-before=1m", "--webhook-cert-validity=2m", "--webhook-ca-validity=5m"})
	if err != nil {
		t.Fatal(err)
	}
	c = o.WebhookCert
	if c.SelfManaged || !c.Mirror || !slices.Equal(c.DNSNames, []string{"localhost", "127.0.0.1"}) || c.SecretName != "s" || c.ServiceName != "svc" ||
		c.RotateBefore != time.Minute || c.CertValidity != 2*time.Minute || c.CAValidity != 5*time.Minute {
		t.Errorf("parsed %+v", c)
	}
}
