package webhookcert

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// trust is what a serving certificate must chain to before the server presents it: the CA bundle
// of the Secret and the caBundle of every webhook of the named configurations, as this replica's
// cache last saw them. The API server verifies the certificate against the webhook's caBundle on
// every call, so a certificate from any other CA (one a previous control plane's run left in the
// cert dir, or an old mounted Secret) would fail every admission request.
type trust struct {
	// bundles are the CA bundles the certificate must chain to, each named for the messages.
	bundles []namedBundle
	// missing says why nothing is trusted yet; "" when the bundles are complete.
	missing string
}

type namedBundle struct {
	name string
	cas  []*x509.Certificate
}

// newTrust reads the trust from the Secret (nil when it does not exist) and the configurations.
func newTrust(secretRef string, secret *corev1.Secret, configs []webhookConfig) *trust {
	if secret == nil {
		return &trust{missing: fmt.Sprintf("Secret %s does not exist yet", secretRef)}
	}
	cas := parseCerts(secret.Data[KeyCA])
	if len(cas) == 0 {
		return &trust{missing: fmt.Sprintf("Secret %s holds no CA yet", secretRef)}
	}
	t := &trust{bundles: []namedBundle{{name: "Secret " + secretRef, cas: cas}}}
	for _, c := range configs {
		for i, b := range c.bundles {
			t.bundles = append(t.bundles, namedBundle{
				name: fmt.Sprintf("webhook %s of %s %s", c.names[i], c.kind, c.obj.GetName()),
				cas:  parseCerts(*b),
			})
		}
	}
	return t
}

// verify returns why cert is not trusted, or nil. The hosts and the expiry are the issuer's
// business; what matters here is that the API server accepts the chain.
func (t *trust) verify(cert *x509.Certificate) error {
	switch {
	case t == nil:
		return errors.New("the webhook CA bundles have not been read yet")
	case t.missing != "":
		return errors.New(t.missing)
	}
	for _, b := range t.bundles {
		if len(b.cas) == 0 {
			return fmt.Errorf("%s has no CA bundle yet", b.name)
		}
		pool := x509.NewCertPool()
		for _, c := range b.cas {
			pool.AddCert(c)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("%s does not trust it: %w", b.name, err)
		}
	}
	return nil
}

// trustReader keeps the server's trust in step with the Secret and the configurations, on every
// replica: each replica serves webhooks, so each must know what the API server trusts.
type trustReader struct {
	reader client.Reader
	opts   Options
	srv    *Server
}

func (r *trustReader) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	var secret *corev1.Secret
	s := &corev1.Secret{}
	switch err := r.reader.Get(ctx, req.NamespacedName, s); {
	case err == nil:
		secret = s
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", req.NamespacedName, err)
	}
	configs, err := readConfigs(ctx, r.reader, r.opts)
	if err != nil {
		return ctrl.Result{}, err
	}
	ref := types.NamespacedName{Namespace: r.opts.Namespace, Name: r.opts.SecretName}.String()
	r.srv.setTrust(newTrust(ref, secret, configs))
	return ctrl.Result{}, nil
}
