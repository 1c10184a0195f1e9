package webhookcert

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// issuerFixture runs the issuer against a fake API server with a clock the test moves.
type issuerFixture struct {
	t   *testing.T
	c   client.Client
	now time.Time
	r   *issuer
}

func newIssuerFixture(t *testing.T, objs ...client.Object) *issuerFixture {
	f := &issuerFixture{t: t, now: t0}
	f.c = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
	opts := Options{
		Namespace: "ns", SecretName: "cert", ServiceName: "svc", DNSNames: []string{"localhost"},
		MutatingWebhookConfiguration: "m", ValidatingWebhookConfiguration: "v",
		CAValidity: 100 * time.Minute, CertValidity: 30 * time.Minute, RotateBefore: 10 * time.Minute,
		Now: func() time.Time { return f.now },
	}.withDefaults()
	if err := opts.validate(); err != nil {
		t.Fatal(err)
	}
	f.r = &issuer{reader: f.c, writer: f.c, opts: opts, hosts: newHosts(opts.hostNames())}
	return f
}

func configs() []client.Object {
	return []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.x.io"}, {Name: "b.x.io"}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "c.x.io"}}},
	}
}

func (f *issuerFixture) reconcile(at time.Duration) reconcile.Result {
	f.t.Helper()
	f.now = t0.Add(at)
	res, err := f.r.Reconcile(context.Background(), reconcile.Request{})
	if err != nil {
		f.t.Fatalf("reconcile at +%s: %v", at, err)
	}
	return res
}

func (f *issuerFixture) secret() (*corev1.Secret, material) {
	f.t.Helper()
	s := &corev1.Secret{}
	if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "cert"}, s); err != nil {
		f.t.Fatal(err)
	}
	return s, parseMaterial(s.Data)
}

// bundles returns the caBundle of every webhook, mutating first.
func (f *issuerFixture) bundles() [][]byte {
	f.t.Helper()
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.c.Get(context.Background(), types.NamespacedName{Name: "m"}, m); err != nil {
		f.t.Fatal(err)
	}
	if err := f.c.Get(context.Background(), types.NamespacedName{Name: "v"}, v); err != nil {
		f.t.Fatal(err)
	}
	return [][]byte{m.Webhooks[0].ClientConfig.CABundle, m.Webhooks[1].ClientConfig.CABundle, v.Webhooks[0].ClientConfig.CABundle}
}

func (f *issuerFixture) wantBundles(cas ...*x509.Certificate) {
	f.t.Helper()
	want := string(encodeCerts(cas))
	for i, b := range f.bundles() {
		if string(b) != want {
			f.t.Errorf("webhook %d trusts %d CAs, want %d (newest first)", i, len(parseCerts(b)), len(cas))
		}
	}
}

func (f *issuerFixture) resourceVersions() []string {
	s, _ := f.secret()
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	_ = f.c.Get(context.Background(), types.NamespacedName{Name: "m"}, m)
	return []string{s.ResourceVersion, m.ResourceVersion}
}

func TestIssuer_CreatesRotatesAndInjects(t *testing.T) {
	f := newIssuerFixture(t, configs()...)

	res := f.reconcile(0)
	s, m := f.secret()
	if s.Type != corev1.SecretTypeTLS || m.ca == nil || m.serving == nil {
		t.Fatalf("first reconcile: Secret type %s, CA %v, serving %v", s.Type, m.ca != nil, m.serving != nil)
	}
	if !newHosts([]string{"svc.ns.svc", "svc", "svc.ns", "svc.ns.svc.cluster.local", "localhost"}).matches(m.serving.cert) {
		t.Errorf("serving certificate names %v", m.serving.cert.DNSNames)
	}
	f.wantBundles(m.ca.cert)
	if res.RequeueAfter != 20*time.Minute {
		t.Errorf("requeue after %s, want 20m (30m validity, 10m lookahead)", res.RequeueAfter)
	}

	t.Run("a reconcile with nothing due writes nothing", func(t *testing.T) {
		before := f.resourceVersions()
		f.reconcile(time.Minute)
		if after := f.resourceVersions(); before[0] != after[0] || before[1] != after[1] {
			t.Errorf("resource versions moved from %v to %v", before, after)
		}
	})

	firstCA, firstServing := m.ca.cert, m.serving.cert
	t.Run("the serving certificate is replaced within the lookahead, by the same CA", func(t *testing.T) {
		f.reconcile(21 * time.Minute)
		_, m := f.secret()
		if m.serving.cert.SerialNumber.Cmp(firstServing.SerialNumber) == 0 || !m.ca.cert.Equal(firstCA) {
			t.Fatal("serving certificate not replaced, or CA changed")
		}
	})

	// +75m: the serving certificate from +21m has expired; the new one ends with the CA at +100m.
	f.reconcile(75 * time.Minute)
	t.Run("the CA is replaced twice the lookahead before its end and both CAs are trusted", func(t *testing.T) {
		f.reconcile(81 * time.Minute)
		_, m := f.secret()
		if m.ca.cert.Equal(firstCA) || len(m.cas) != 2 || !m.cas[1].Equal(firstCA) {
			t.Fatalf("CA not rotated: %d CAs", len(m.cas))
		}
		if err := m.serving.cert.CheckSignatureFrom(firstCA); err != nil {
			t.Error("the serving certificate changed with the CA; it is not due yet")
		}
		f.wantBundles(m.cas...)
	})

	t.Run("a serving certificate from the new CA waits until every configuration trusts it", func(t *testing.T) {
		// Someone re-applies a configuration with the old bundle only.
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		_ = f.c.Get(context.Background(), types.NamespacedName{Name: "m"}, m)
		m.Webhooks[1].ClientConfig.CABundle = encodeCerts([]*x509.Certificate{firstCA})
		if err := f.c.Update(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		_, before := f.secret()
		res := f.reconcile(91 * time.Minute)
		_, after := f.secret()
		if !after.serving.cert.Equal(before.serving.cert) {
			t.Fatal("issued a serving certificate from a CA a configuration did not trust yet")
		}
		if res.RequeueAfter > waitRequeue {
			t.Errorf("requeue after %s while waiting, want at most %s", res.RequeueAfter, waitRequeue)
		}
		f.wantBundles(after.cas...) // re-injected in the same pass

		f.reconcile(91 * time.Minute)
		_, now := f.secret()
		if err := now.serving.cert.CheckSignatureFrom(now.ca.cert); err != nil {
			t.Errorf("once trusted, the serving certificate is not from the new CA: %v", err)
		}
	})

	t.Run("the old CA leaves the bundle when it expires", func(t *testing.T) {
		f.reconcile(101 * time.Minute)
		_, m := f.secret()
		if len(m.cas) != 1 || m.cas[0].Equal(firstCA) {
			t.Fatalf("%d CAs after the first expired", len(m.cas))
		}
		f.wantBundles(m.cas...)
	})
}

func TestIssuer_ReplacesGarbageAndWorksWithoutConfigurations(t *testing.T) {
	f := newIssuerFixture(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cert"},
		Data:       map[string][]byte{KeyCert: []byte("junk"), KeyCA: []byte("junk"), "other": []byte("kept")},
	})
	f.reconcile(0)
	s, m := f.secret()
	if m.ca == nil || m.serving == nil {
		t.Fatal("garbage not replaced")
	}
	if string(s.Data["other"]) != "kept" {
		t.Error("a foreign key was dropped")
	}
	if err := m.serving.cert.CheckSignatureFrom(m.ca.cert); err != nil {
		t.Error(err)
	}
}
