package webhookcert

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Defaults of the validity periods.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
	DefaultRotateBefore = 90 * 24 * time.Hour
)

// DefaultCertDir is where controller-runtime's webhook server looks for tls.crt and tls.key when
// no directory is given.
func DefaultCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// Options configure the certificate management.
type Options struct {
	// Namespace and SecretName locate the Secret holding the CA and the serving certificate.
	Namespace  string
	SecretName string
	// ServiceName is the webhook Service; the certificate names <svc>, <svc>.<ns>, <svc>.<ns>.svc
	// and <svc>.<ns>.svc.cluster.local. Empty: no Service names.
	ServiceName string
	// DNSNames are further names of the certificate; entries that parse as IP addresses become IP
	// SANs (an operator run outside the cluster is called at https://localhost:<port>).
	DNSNames []string
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration name the configurations the
	// CA bundle is injected into; empty skips one.
	MutatingWebhookConfiguration   string
	ValidatingWebhookConfiguration string
	// CertDir is the webhook server's certificate directory, written by the mirror.
	CertDir string
	// Mirror copies the Secret into CertDir on every replica (for an operator outside the cluster,
	// where nothing mounts the Secret).
	Mirror bool
	// CAValidity and CertValidity are the lifetimes of new CAs and serving certificates.
	// RotateBefore is how long before its end a serving certificate is replaced; a CA is replaced
	// twice that long before its end.
	CAValidity   time.Duration
	CertValidity time.Duration
	RotateBefore time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.SecretName == "" {
		o.SecretName = DefaultSecretName
	}
	if o.CertDir == "" {
		o.CertDir = DefaultCertDir()
	}
	if o.CAValidity == 0 {
		o.CAValidity = DefaultCAValidity
	}
	if o.CertValidity == 0 {
		o.CertValidity = DefaultCertValidity
	}
	if o.RotateBefore == 0 {
		o.RotateBefore = DefaultRotateBefore
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("the Secret's namespace is required"))
	}
	if len(o.hostNames()) == 0 {
		errs = append(errs, errors.New("a Service name or at least one DNS name is required"))
	}
	if o.RotateBefore <= 0 || o.CertValidity <= o.RotateBefore {
		errs = append(errs, fmt.Errorf("the certificate validity (%s) must be longer than the rotation lookahead (%s)", o.CertValidity, o.RotateBefore))
	}
	if o.CAValidity <= 2*o.RotateBefore {
		errs = append(errs, fmt.Errorf("the CA validity (%s) must be longer than twice the rotation lookahead (%s)", o.CAValidity, o.RotateBefore))
	}
	return errors.Join(errs...)
}

// hostNames are the names the serving certificate is issued for.
func (o Options) hostNames() []string {
	var names []string
	if svc, ns := o.ServiceName, o.Namespace; svc != "" {
		names = append(names, svc+"."+ns+".svc", svc, svc+"."+ns, svc+"."+ns+".svc.cluster.local")
	}
	return append(names, o.DNSNames...)
}
