//go:build e2e

package werfbundle_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// TestWerfBundle_UnusableRegistrySecretsSayWhichAndWhy: a credentials Secret that does not exist,
// one without a password, and a CA Secret whose ca.crt holds no certificate each keep the bundle
// from polling, with a message naming the Secret, the field that names it and what is wrong,
// and no Job.
func TestWerfBundle_UnusableRegistrySecretsSayWhichAndWhy(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "no-password", Namespace: f.ns},
		Data: map[string][]byte{"username": []byte("bot")}})
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-a-ca", Namespace: f.ns},
		Data: map[string][]byte{"ca.crt": []byte("not a certificate")}})
	creds := func(name string) bundleOption {
		return func(b *werfv1.WerfBundle) { b.Spec.Registry.SecretRef = &corev1.LocalObjectReference{Name: name} }
	}
	ca := func(b *werfv1.WerfBundle) {
		b.Spec.Registry.CertSecretRef = &corev1.LocalObjectReference{Name: "not-a-ca"}
	}
	cases := []struct {
		b    *werfv1.WerfBundle
		want string
	}{
		{f.bundle("missing", reg.Repository("demo/app"), creds("absent")),
			"Secret " + f.ns + "/absent named in spec.registry.secretRef does not exist"},
		{f.bundle("no-password", reg.Repository("demo/app"), creds("no-password")),
			"spec.registry.secretRef: registry credentials: Secret " + f.ns + "/no-password is missing key password"},
		{f.bundle("bad-ca", reg.Repository("demo/app"), ca),
			"Secret " + f.ns + "/not-a-ca named in spec.registry.certSecretRef holds no PEM certificate in key ca.crt"},
	}
	for _, c := range cases {
		f.create(c.b)
	}
	f.start()
	for _, c := range cases {
		got := f.waitFor(c.b, c.b.Name+" says what is wrong", func(b *werfv1.WerfBundle) bool {
			return strings.Contains(b.Status.LastErrorMessage, c.want)
		})
		if r := conditions.Get(got.Status.Conditions, conditions.Ready); r == nil || r.Status != metav1.ConditionFalse ||
			r.Reason != werfbundle.ReasonRegistryRetrying || !strings.Contains(r.Message, c.want) {
			t.Errorf("%s: Ready = %+v, want False, %s, saying %q", c.b.Name, r, werfbundle.ReasonRegistryRetrying, c.want)
		}
		// The hint points at the Secret the message names, which is not always spec.registry.secretRef.
		if msg := got.Status.LastErrorMessage; !strings.HasSuffix(msg, "; fix the Secret this message names") {
			t.Errorf("%s: message %q does not end with the hint to fix the Secret it names", c.b.Name, msg)
		}
		if jobs := f.jobs(c.b); len(jobs) != 0 {
			t.Errorf("%s: %d Jobs without usable registry Secrets", c.b.Name, len(jobs))
		}
	}
}
