package webhookcert

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrust_VerifiesAgainstTheSecretAndEveryWebhook(t *testing.T) {
	now := time.Now()
	current, previous, other := mustCA(t, now, 24*time.Hour), mustCA(t, now, 24*time.Hour), mustCA(t, now, 24*time.Hour)
	h := newHosts([]string{"localhost"})
	fromCurrent := mustServing(t, current, h, now, time.Hour)
	fromPrevious := mustServing(t, previous, h, now, time.Hour)
	fromOther := mustServing(t, other, h, now, time.Hour)

	secret := func(cas ...*keyPair) *corev1.Secret {
		var certs []byte
		for _, c := range cas {
			certs = append(certs, c.certPEM...)
		}
		return &corev1.Secret{Data: map[string][]byte{KeyCA: certs}}
	}
	config := func(bundles ...[]byte) []webhookConfig {
		o := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
		for i, b := range bundles {
			o.Webhooks = append(o.Webhooks, admissionregistrationv1.MutatingWebhook{Name: string(rune('a'+i)) + ".x.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: b}})
		}
		return []webhookConfig{mutatingConfig(o)}
	}
	both := append(append([]byte{}, current.certPEM...), previous.certPEM...)

	for _, tc := range []struct {
		name    string
		trust   *trust
		cert    *keyPair
		wantErr string
	}{
		{"not read yet", nil, fromCurrent, "have not been read yet"},
		{"no Secret", newTrust("ns/cert", nil, config(current.certPEM)), fromCurrent, "Secret ns/cert does not exist yet"},
		{"Secret without a CA", newTrust("ns/cert", &corev1.Secret{}, nil), fromCurrent, "Secret ns/cert holds no CA yet"},
		{"trusted by the Secret and every webhook", newTrust("ns/cert", secret(current), config(current.certPEM, current.certPEM)), fromCurrent, ""},
		{"no configurations: the Secret decides", newTrust("ns/cert", secret(current), nil), fromCurrent, ""},
		{"an older CA still in every bundle", newTrust("ns/cert", secret(current, previous), config(both)), fromPrevious, ""},
		{"from another CA (a previous control plane)", newTrust("ns/cert", secret(current), config(current.certPEM)), fromOther,
			"Secret ns/cert does not trust it: x509: certificate signed by unknown authority"},
		{"a webhook not injected yet", newTrust("ns/cert", secret(current), config(current.certPEM, nil)), fromCurrent,
			"webhook b.x.io of MutatingWebhookConfiguration m has no CA bundle yet"},
		{"a webhook with another bundle", newTrust("ns/cert", secret(current, previous), config(both, previous.certPEM)), fromCurrent,
			"webhook b.x.io of MutatingWebhookConfiguration m does not trust it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.trust.verify(tc.cert.cert)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("verify = %v, want trusted", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("verify = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
