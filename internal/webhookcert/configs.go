package webhookcert

import (
	"bytes"
	"crypto/x509"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// webhookConfig is a Mutating- or ValidatingWebhookConfiguration seen through the caBundle of
// each of its webhooks.
type webhookConfig struct {
	obj     client.Object
	bundles []*[]byte
}

func mutatingConfig(o *admissionregistrationv1.MutatingWebhookConfiguration) webhookConfig {
	c := webhookConfig{obj: o}
	for i := range o.Webhooks {
		c.bundles = append(c.bundles, &o.Webhooks[i].ClientConfig.CABundle)
	}
	return c
}

func validatingConfig(o *admissionregistrationv1.ValidatingWebhookConfiguration) webhookConfig {
	c := webhookConfig{obj: o}
	for i := range o.Webhooks {
		c.bundles = append(c.bundles, &o.Webhooks[i].ClientConfig.CABundle)
	}
	return c
}

// trusts reports whether every webhook lists ca in its caBundle.
func (c webhookConfig) trusts(ca *x509.Certificate) bool {
	for _, b := range c.bundles {
		if !containsCert(parseCerts(*b), ca) {
			return false
		}
	}
	return true
}

// inject sets every webhook's caBundle to bundle and reports whether anything changed.
func (c webhookConfig) inject(bundle []byte) bool {
	changed := false
	for _, b := range c.bundles {
		if !bytes.Equal(*b, bundle) {
			*b = bytes.Clone(bundle)
			changed = true
		}
	}
	return changed
}

// trustedByAll reports whether every configuration trusts ca; true when there are none.
func trustedByAll(configs []webhookConfig, ca *x509.Certificate) bool {
	for _, c := range configs {
		if !c.trusts(ca) {
			return false
		}
	}
	return true
}
