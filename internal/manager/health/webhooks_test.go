package health

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Modes of the test's webhook server.
const (
	modeOK int32 = iota
	modeSlow
	modeFail
)

// webhookServer is an operator's webhook played by the test: it answers reviews, or slowly, or
// with 500, as mode says.
type webhookServer struct {
	*httptest.Server
	mode atomic.Int32
}

func newWebhookServer(t testing.TB) *webhookServer {
	w := &webhookServer{}
	w.Server = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch w.mode.Load() {
		case modeSlow:
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		case modeFail:
			http.Error(rw, "boom", http.StatusInternalServerError)
			return
		}
		var in struct {
			APIVersion, Kind string
			Request          struct{ UID string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		out := map[string]any{"apiVersion": in.APIVersion, "kind": in.Kind,
			"response": map[string]any{"uid": in.Request.UID, "allowed": true, "result": map[string]string{"status": "Success"}}}
		_ = json.NewEncoder(rw).Encode(out)
	}))
	t.Cleanup(w.Close)
	return w
}

// caBundle is the PEM of the server's self-signed certificate.
func (w *webhookServer) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.Certificate().Raw})
}

// validatingWebhook registers a ValidatingWebhookConfiguration of release (in namespace
// operators) calling url. Its rule names a resource nothing creates, so the API server never
// calls it itself.
func validatingWebhook(t testing.TB, name, release, url string, caBundle []byte) {
	t.Helper()
	validatingWebhookIn(t, "operators", name, release, url, caBundle)
}

// validatingWebhookIn is validatingWebhook of a release in namespace ns.
func validatingWebhookIn(t testing.TB, ns, name, release, url string, caBundle []byte) {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			ReleaseNameAnnotation: release, ReleaseNamespaceAnnotation: ns}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.health.test.slipway.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"health.test.slipway.dev"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}},
			}},
		}},
	}
	if err := env.Client.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cfg) })
}

func checkOnce(t *testing.T, c *Checker, target Target) Result {
	t.Helper()
	got, err := c.Check(testCtx(t), "local", env.Config, target)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestWebhooks(t *testing.T) {
	srv := newWebhookServer(t)
	validatingWebhook(t, "wh-good", "wh-good", srv.URL+"/validate", srv.caBundle())
	validatingWebhook(t, "wh-wrong-ca", "wh-wrong-ca", srv.URL+"/validate", otherCA(t))
	target := func(release string) Target {
		return Target{OperatorName: release, Namespace: "operators", Release: release}
	}
	c := NewChecker(Config{})

	t.Run("answering webhook with a valid certificate passes", func(t *testing.T) {
		srv.mode.Store(modeOK)
		got := checkOnce(t, c, target("wh-good"))
		w := got.Webhooks
		if w.Health != api.Healthy || w.Total != 1 || w.Healthy != 1 || got.WebhookStatus != api.WebhookAvailable {
			t.Fatalf("webhooks = %+v (webhookStatus %s), want 1 of 1 healthy, Available", w, got.WebhookStatus)
		}
		r := w.Webhooks[0]
		if r.Answer != api.VerdictPassed || r.Certificate != api.VerdictPassed || r.StatusCode != 200 || r.Kind != "Validating" ||
			r.Name != "wh-good/validate.health.test.slipway.dev" || r.CertificateExpires == nil {
			t.Fatalf("webhook = %+v", r)
		}
	})

	t.Run("slow webhook fails", func(t *testing.T) {
		srv.mode.Store(modeSlow)
		defer srv.mode.Store(modeOK)
		got := checkOnce(t, c, target("wh-good"))
		w := got.Webhooks
		if w.Health != api.Unhealthy || w.Healthy != 0 || w.Webhooks[0].Answer != api.VerdictFailed || w.Webhooks[0].Message != "no answer within 1s" ||
			got.WebhookStatus != api.WebhookUnavailable {
			t.Fatalf("webhooks = %+v, want Unhealthy: no answer within 1s", w)
		}
	})

	t.Run("failing webhook fails", func(t *testing.T) {
		srv.mode.Store(modeFail)
		defer srv.mode.Store(modeOK)
		got := checkOnce(t, c, target("wh-good"))
		w := got.Webhooks
		if w.Health != api.Unhealthy || got.Health != api.Unhealthy || w.Webhooks[0].StatusCode != 500 || w.Webhooks[0].Message != "answered 500, want 200" {
			t.Fatalf("webhooks = %+v, want Unhealthy: answered 500", w)
		}
	})

	t.Run("certificate not signed by the caBundle fails", func(t *testing.T) {
		w := checkOnce(t, c, target("wh-wrong-ca")).Webhooks
		r := w.Webhooks[0]
		if w.Health != api.Unhealthy || r.Answer != api.VerdictPassed || r.Certificate != api.VerdictFailed ||
			r.Message != "certificate: not signed by the configuration's caBundle" {
			t.Fatalf("webhooks = %+v, want Unhealthy: certificate not signed by the caBundle", w)
		}
	})

	t.Run("expired certificate fails", func(t *testing.T) {
		expired := srv.Certificate().NotAfter.Add(time.Hour)
		late := NewChecker(Config{Now: func() time.Time { return expired }})
		r := checkOnce(t, late, target("wh-good")).Webhooks.Webhooks[0]
		if r.Certificate != api.VerdictFailed || r.Message != "certificate: expired at "+srv.Certificate().NotAfter.UTC().Format(time.RFC3339) {
			t.Fatalf("webhook = %+v, want certificate expired", r)
		}
	})

	t.Run("conversion webhook of a CRD is called", func(t *testing.T) {
		srv.mode.Store(modeOK)
		crd := convertedCRD(t, srv.URL+"/convert", srv.caBundle())
		got := checkOnce(t, c, Target{OperatorName: "conv", Namespace: "operators", Release: "conv", CRDs: []string{crd}})
		w := got.Webhooks
		if w.Health != api.Healthy || w.Total != 1 || w.Webhooks[0].Kind != "Conversion" || w.Webhooks[0].Name != crd ||
			w.Webhooks[0].Answer != api.VerdictPassed || w.Webhooks[0].Certificate != api.VerdictPassed {
			t.Fatalf("webhooks = %+v, want the conversion webhook passing", w)
		}
		srv.mode.Store(modeFail)
		defer srv.mode.Store(modeOK)
		if w := checkOnce(t, c, Target{OperatorName: "conv", Namespace: "operators", Release: "conv", CRDs: []string{crd}}).Webhooks; w.Health != api.Unhealthy {
			t.Fatalf("failing conversion webhook: %+v, want Unhealthy", w)
		}
	})

	t.Run("no webhooks pass with none counted", func(t *testing.T) {
		got := checkOnce(t, c, target("wh-none"))
		w := got.Webhooks
		if w.Health != api.Healthy || w.Total != 0 || len(w.Webhooks) != 0 || got.WebhookStatus != api.WebhookNotConfigured {
			t.Fatalf("webhooks = %+v", w)
		}
	})
}

// convertedCRD installs a CRD with a conversion webhook at url and returns its name.
func convertedCRD(t *testing.T, url string, caBundle []byte) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "converteds.health.test.slipway.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "health.test.slipway.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "converteds", Singular: "converted", Kind: "Converted", ListKind: "ConvertedList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: openSchema()},
				{Name: "v1beta1", Served: true, Schema: openSchema()},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
					ConversionReviewVersions: []string{"v1"},
				},
			},
		},
	}
	if err := env.Client.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	return crd.Name
}

func openSchema() *apiextensionsv1.CustomResourceValidation {
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr.To(true)}}
}

// otherCA is the PEM of a fresh self-signed CA that signed nothing the test serves.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
