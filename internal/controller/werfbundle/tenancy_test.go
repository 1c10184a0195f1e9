//go:build e2e

package werfbundle_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// otherNamespace creates a namespace with the converge ServiceAccount, accepting no bundles.
func (f *fixture) otherNamespace(name string) string {
	f.t.Helper()
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	f.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: name}})
	return name
}

// TestWerfBundle_CrossNamespaceRefusedUntilTargetAccepts: a bundle aimed at a namespace that does
// not accept bundles from the bundle's namespace is Failed and Stalled with reason
// CrossNamespaceRefused, with a Warning Event and no Job; annotating the target namespace with
// werf.io/accept-bundles-from deploys it at once (the Namespace is watched: a refused bundle is
// not requeued).
func TestWerfBundle_CrossNamespaceRefusedUntilTargetAccepts(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	other := f.otherNamespace(f.ns + "-other")
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "target-values", Namespace: other},
		StringData: map[string]string{"values.yaml": "from: target\n"}})
	b := f.bundle("app", reg.Repository("demo/app"), withTarget(other),
		withValuesFrom(werfv1.ValuesReference{SecretRef: &werfv1.ValuesSource{Name: "target-values"}}))
	f.create(b)
	f.start()

	got := f.waitPhase(b, werfv1.PhaseFailed, "")
	r := conditions.Get(got.Status.Conditions, conditions.Ready)
	if r == nil || r.Reason != werfbundle.ReasonCrossNamespaceRefused ||
		!strings.Contains(r.Message, "namespace "+other+" does not accept bundles from namespace "+f.ns) ||
		!strings.Contains(r.Message, werfv1.AcceptBundlesFromAnnotation) {
		t.Errorf("Ready = %+v", r)
	}
	if s := conditions.Get(got.Status.Conditions, conditions.Stalled); s == nil || s.Reason != werfbundle.ReasonCrossNamespaceRefused {
		t.Errorf("Stalled = %+v", s)
	}
	if s := kstatus(t, got); s != status.FailedStatus {
		t.Errorf("kstatus = %s, want Failed", s)
	}
	f.eventually("a Warning Event says why", func() bool {
		for _, e := range eventsOf(f, b) {
			if strings.Contains(e, "does not accept bundles from namespace "+f.ns) {
				return true
			}
		}
		return false
	})
	if n := len(f.jobs(b)); n != 0 {
		t.Errorf("%d Jobs in a namespace that refuses the bundle", n)
	}

	// Another namespace's opt-in changes nothing; this one's deploys at once.
	var ns corev1.Namespace
	if err := f.c.Get(f.ctx, clientKey(other), &ns); err != nil {
		t.Fatal(err)
	}
	ns.Annotations = map[string]string{werfv1.AcceptBundlesFromAnnotation: "team-x, " + f.ns}
	if err := f.c.Update(f.ctx, &ns); err != nil {
		t.Fatal(err)
	}
	got = f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	if jobs := f.jobs(b); len(jobs) != 1 || jobs[0].Namespace != other {
		t.Errorf("Jobs after the opt-in: %d, want one in %s", len(jobs), other)
	}
	if c := conditions.Get(got.Status.Conditions, conditions.Stalled); c != nil {
		t.Errorf("still Stalled: %+v", c)
	}
}

// TestWerfBundle_AllowCrossNamespaceRestoresSingleTenantBehaviour: with the operator flag
// --werfbundle-allow-cross-namespace a bundle deploys into a namespace that accepts nothing,
// with values read from there.
func TestWerfBundle_AllowCrossNamespaceRestoresSingleTenantBehaviour(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	other := f.otherNamespace(f.ns + "-other")
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "target-values", Namespace: other},
		StringData: map[string]string{"values.yaml": "from: target\n"}})
	b := f.bundle("app", reg.Repository("demo/app"), withTarget(other),
		withValuesFrom(werfv1.ValuesReference{SecretRef: &werfv1.ValuesSource{Name: "target-values"}}))
	f.create(b)
	f.reconciler().AllowCrossNamespace = true
	f.start()
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	jobs := f.jobs(b)
	if len(jobs) != 1 || jobs[0].Namespace != other {
		t.Fatalf("Jobs: %d, want one in %s", len(jobs), other)
	}
	var secret corev1.Secret
	if err := f.c.Get(f.ctx, clientKeyIn(other, jobs[0].Name), &secret); err != nil {
		t.Fatal(err)
	}
	if v := string(secret.Data["values.yaml"]); !strings.Contains(v, "from: target") {
		t.Errorf("values = %q, want those of the target namespace", v)
	}
}

// TestWerfBundle_OwnNamespaceNeedsNoOptIn: the default target, the bundle's own namespace, needs
// no annotation.
func TestWerfBundle_OwnNamespaceNeedsNoOptIn(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: f.ns}})
	b := f.bundle("app", reg.Repository("demo/app"), withTarget(""))
	f.create(b)
	f.start()
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	if jobs := f.jobs(b); len(jobs) != 1 || jobs[0].Namespace != f.ns {
		t.Errorf("Jobs: %d, want one in %s", len(jobs), f.ns)
	}
}
