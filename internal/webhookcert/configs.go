package webhookcert

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// webhookConfig is a Mutating- or ValidatingWebhookConfiguration seen through the caBundle of
// each of its webhooks.
type webhookConfig struct {
	obj  client.Object
	kind string
	// names and bundles are each webhook's name and caBundle, in order.
	names   []string
	bundles []*[]byte
}

func mutatingConfig(o *admissionregistrationv1.MutatingWebhookConfiguration) webhookConfig {
	c := webhookConfig{obj: o, kind: "MutatingWebhookConfiguration"}
	for i := range o.Webhooks {
		c.names = append(c.names, o.Webhooks[i].Name)
		c.bundles = append(c.bundles, &o.Webhooks[i].ClientConfig.CABundle)
	}
	return c
}

func validatingConfig(o *admissionregistrationv1.ValidatingWebhookConfiguration) webhookConfig {
	c := webhookConfig{obj: o, kind: "ValidatingWebhookConfiguration"}
	for i := range o.Webhooks {
		c.names = append(c.names, o.Webhooks[i].Name)
		c.bundles = append(c.bundles, &o.Webhooks[i].ClientConfig.CABundle)
	}
	return c
}

// readConfigs returns the named webhook configurations that exist.
func readConfigs(ctx context.Context, reader client.Reader, opts Options) ([]webhookConfig, error) {
	var out []webhookConfig
	if name := opts.MutatingWebhookConfiguration; name != "" {
		o := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if found, err := getConfig(ctx, reader, name, o); err != nil {
			return nil, err
		} else if found {
			out = append(out, mutatingConfig(o))
		}
	}
	if name := opts.ValidatingWebhookConfiguration; name != "" {
		o := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if found, err := getConfig(ctx, reader, name, o); err != nil {
			return nil, err
		} else if found {
			out = append(out, validatingConfig(o))
		}
	}
	return out, nil
}

func getConfig(ctx context.Context, reader client.Reader, name string, o client.Object) (bool, error) {
	err := reader.Get(ctx, types.NamespacedName{Name: name}, o)
	if apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("Webhook configuration not found; the CA bundle is injected once it exists", "name", name)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading webhook configuration %s: %w", name, err)
	}
	return true, nil
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
