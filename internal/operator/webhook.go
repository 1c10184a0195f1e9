package operator

import (
	"flag"
	"fmt"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/slipway-dev/slipway/internal/webhookcert"
)

// WebhookCertOptions configure the webhook server's serving certificate.
type WebhookCertOptions struct {
	// SelfManaged: the operator creates, rotates and injects the certificate itself (package
	// webhookcert). Off when cert-manager (or anything else) provides the files in the cert dir.
	SelfManaged bool
	// SecretName is the Secret, in the operator namespace, holding the CA and the certificate.
	SecretName string
	// ServiceName is the webhook Service the certificate is issued for.
	ServiceName string
	// DNSNames are further DNS names or IP addresses of the certificate.
	DNSNames []string
	// Mirror writes the Secret's certificate into the cert dir (an operator outside the cluster).
	Mirror bool
	// CAValidity, CertValidity and RotateBefore: see webhookcert.Options.
	CAValidity   time.Duration
	CertValidity time.Duration
	RotateBefore time.Duration
}

func (o *WebhookCertOptions) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.SelfManaged, "webhook-cert-self-managed", true,
		"create, rotate and inject the webhook serving certificate in the operator; false when cert-manager provides it in --webhook-cert-dir")
	fs.StringVar(&o.SecretName, "webhook-cert-secret", webhookcert.DefaultSecretName, "Secret in --namespace holding the webhook CA and serving certificate")
	fs.StringVar(&o.ServiceName, "webhook-service-name", webhookcert.DefaultServiceName, "Service in --namespace in front of the webhook server; the certificate names it")
	fs.Func("webhook-cert-dns-names", "comma-separated further DNS names or IP addresses of the serving certificate (e.g. localhost,127.0.0.1 outside the cluster)",
		func(s string) error {
			o.DNSNames = nil
			for _, n := range strings.Split(s, ",") {
				if n = strings.TrimSpace(n); n != "" {
					o.DNSNames = append(o.DNSNames, n)
				}
			}
			return nil
		})
	fs.BoolVar(&o.Mirror, "webhook-cert-mirror", false, "write the Secret's certificate into --webhook-cert-dir (for an operator run outside the cluster, where nothing mounts the Secret)")
	fs.DurationVar(&o.CAValidity, "webhook-ca-validity", webhookcert.DefaultCAValidity, "lifetime of a new webhook CA")
	fs.DurationVar(&o.CertValidity, "webhook-cert-validity", webhookcert.DefaultCertValidity, "lifetime of a new webhook serving certificate")
	fs.DurationVar(&o.RotateBefore, "webhook-cert-rotate-before", webhookcert.DefaultRotateBefore,
		"replace the serving certificate this long before it expires (the CA twice this long before)")
}

// setupWebhookServing makes readiness wait for the webhook server and, when self-managed, adds the
// certificate management. Nothing happens when no controller registered a webhook.
func setupWebhookServing(mgr ctrl.Manager, srv *webhookcert.Server, opts Options) error {
	if !srv.Registered() {
		return nil
	}
	if err := mgr.AddReadyzCheck("webhook", srv.StartedChecker()); err != nil {
		return fmt.Errorf("adding the webhook readiness check: %w", err)
	}
	log := mgr.GetLogger().WithName("setup")
	c := opts.WebhookCert
	if !c.SelfManaged {
		log.Info("Serving webhooks with a certificate provided in the cert dir", "certDir", opts.WebhookCertDir)
		return nil
	}
	err := webhookcert.Setup(mgr, webhookcert.Options{
		Namespace:                      opts.Namespace,
		SecretName:                     c.SecretName,
		ServiceName:                    c.ServiceName,
		DNSNames:                       c.DNSNames,
		MutatingWebhookConfiguration:   webhookcert.MutatingWebhookConfiguration,
		ValidatingWebhookConfiguration: webhookcert.ValidatingWebhookConfiguration,
		CertDir:                        opts.WebhookCertDir,
		Mirror:                         c.Mirror,
		CAValidity:                     c.CAValidity,
		CertValidity:                   c.CertValidity,
		RotateBefore:                   c.RotateBefore,
	})
	if err != nil {
		return err
	}
	log.Info("Managing the webhook serving certificate", "secret", opts.Namespace+"/"+c.SecretName, "mirror", c.Mirror)
	return nil
}
