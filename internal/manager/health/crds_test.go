package health

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var gizmoGVK = schema.GroupVersionKind{Group: "health.test.slipway.dev", Version: "v1", Kind: "Gizmo"}

const gizmoCRD = "gizmos.health.test.slipway.dev"

// installGizmoCRD installs the CRD of the test's operator and waits until it is served.
func installGizmoCRD(t testing.TB) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gizmoCRD},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gizmoGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true, Schema: openSchema(),
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	if err := env.Client.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	// Deleted and gone before the next test installs it again.
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), crd)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		testenv.Eventually(ctx, t, "the Gizmo CRD gone", func() (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), err
		})
	})
	testenv.Eventually(testCtx(t), t, "the Gizmo CRD served", func() (bool, error) {
		err := env.Client.List(context.Background(), gizmoList(), client.InNamespace("default"))
		return err == nil, err
	})
}

func gizmoList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gizmoGVK.GroupVersion().WithKind("GizmoList"))
	return l
}

func gizmo(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gizmoGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "size")
	return u
}

// fakeOperator plays the operator's controller: it sets each Gizmo's Ready condition (False for
// the names in failing) and observedGeneration, until stopped.
type fakeOperator struct {
	ns     string
	mu     sync.Mutex
	fail   map[string]bool
	cancel context.CancelFunc
	done   chan struct{}
}

func startOperator(t testing.TB, ns string) *fakeOperator {
	ctx, cancel := context.WithCancel(context.Background())
	o := &fakeOperator{ns: ns, fail: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for ctx.Err() == nil {
			o.reconcile(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(o.stop)
	return o
}

func (o *fakeOperator) stop() { o.cancel(); <-o.done }

func (o *fakeOperator) setFailing(names ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fail = map[string]bool{}
	for _, n := range names {
		o.fail[n] = true
	}
}

func (o *fakeOperator) reconcile(ctx context.Context) {
	l := gizmoList()
	if err := env.Client.List(ctx, l, client.InNamespace(o.ns)); err != nil {
		return
	}
	o.mu.Lock()
	fail := o.fail
	o.mu.Unlock()
	for i := range l.Items {
		u := &l.Items[i]
		want := "True"
		if fail[u.GetName()] {
			want = "False"
		}
		og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if og == u.GetGeneration() && len(conds) == 1 && conds[0].(map[string]any)["status"] == want {
			continue
		}
		_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"type": "Ready", "status": want, "reason": "Reconciled", "observedGeneration": u.GetGeneration(),
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}, "status", "conditions")
		_ = env.Client.Status().Update(ctx, u)
	}
}

func TestCRDReconciliation(t *testing.T) {
	installGizmoCRD(t)
	ns := namespace(t)
	const n = 40
	for i := range n {
		if err := env.Client.Create(context.Background(), gizmo(ns, fmt.Sprintf("g%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	op := startOperator(t, ns)
	c := NewChecker(Config{})
	target := Target{OperatorName: "gizmo", Namespace: ns, Release: "gizmo", CRDs: []string{gizmoCRD}}
	crds := func(cond func(api.ReconciliationStatus) bool) api.ReconciliationStatus {
		t.Helper()
		return checkUntil(t, c, target, "the reconciliation state", func(h Result) bool { return cond(h.CRDs) }).CRDs
	}

	got := crds(func(s api.ReconciliationStatus) bool { return s.Ready == n })
	if got.Health != api.Healthy || got.CRDs != 1 || got.Resources != n || got.ErrorRate != 0 || got.State() != api.ReconciliationActive {
		t.Fatalf("all reconciled: %+v, want Healthy", got)
	}

	// Resources Ready=False while reconciled (observedGeneration current) are their tenants':
	// without a baseline none counts against the operator, whatever their share.
	op.setFailing("g00", "g01", "g02", "g03")
	got = crds(func(s api.ReconciliationStatus) bool { return s.Failing == 4 })
	if got.Health != api.Healthy || got.ErrorRate != 0 || got.State() != api.ReconciliationActive || got.Baseline != nil ||
		got.TenantFailures.FailingReconciled != 4 || got.OperatorFailures != (api.OperatorFailures{}) ||
		!hasMessage(got.Messages, "4 Ready=False while reconciled: the tenants'") || !hasMessage(got.Messages, "no baseline") {
		t.Fatalf("4 of 40 failing for their tenants (10 %%): %+v, want Healthy", got)
	}
	if len(got.Examples) != maxExamples || got.Examples[0].Blame != BlameTenant || got.Examples[0].Reason != "Reconciled" {
		t.Fatalf("examples: %+v, want %d of the tenants' with their reasons", got.Examples, maxExamples)
	}

	// The operator stops; the resources change. Their Ready conditions changed moments ago, so
	// they still count as reconciled; six minutes later they are stale.
	op.setFailing()
	crds(func(s api.ReconciliationStatus) bool { return s.Ready == n })
	op.stop()
	l := gizmoList()
	if err := env.Client.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		_ = unstructured.SetNestedField(l.Items[i].Object, int64(2), "spec", "size")
		if err := env.Client.Update(context.Background(), &l.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got = checkOnce(t, c, target).CRDs; got.Health != api.Healthy || got.Pending != n {
		t.Fatalf("just changed: %+v, want still Healthy, 40 pending", got)
	}
	late := NewChecker(Config{Now: func() time.Time { return time.Now().Add(6 * time.Minute) }})
	got = checkOnce(t, late, target).CRDs
	if got.Health != api.Unhealthy || got.Stale != n || got.OperatorFailures.NotReconciling != n || got.ErrorRate != 1 ||
		!hasMessage(got.Messages, "40 not reconciled within 5m0s") || got.State() != api.ReconciliationStale ||
		got.Examples[0].Blame != BlameOperator || !strings.Contains(got.Examples[0].Detail, "observedGeneration 1 behind generation 2") {
		t.Fatalf("six minutes after a change nobody reconciled: %+v, want Unhealthy, 40 stale", got)
	}

	// A new resource without status is pending, not stale, for its first minutes.
	if err := env.Client.Create(context.Background(), gizmo(ns, "new")); err != nil {
		t.Fatal(err)
	}
	if got = checkOnce(t, c, target).CRDs; got.Pending != n+1 || got.Resources != n+1 || got.State() != api.ReconciliationActive {
		t.Fatalf("a new resource: %+v, want it pending too, Active", got)
	}
}

func TestCRDReconciliationNotChecked(t *testing.T) {
	got := checkOnce(t, NewChecker(Config{}), Target{OperatorName: "x", Namespace: "default", Release: "x",
		CRDs: []string{"missings.health.test.slipway.dev"}})
	s := got.CRDs
	if s.Health != api.Degraded || s.CRDs != 0 || !hasMessage(s.Messages, "not checked: CRD missings.health.test.slipway.dev") {
		t.Fatalf("missing CRD: %+v, want Degraded, not checked", s)
	}
	if got.CRDReconciliation != api.ReconciliationUnknown {
		t.Errorf("crdReconciliation of a missing CRD: %s, want Unknown", got.CRDReconciliation)
	}
	w := got.Webhooks
	if w.Health != api.Degraded || !hasMessage(w.Messages, "not checked: conversion webhook of CRD missings") || got.WebhookStatus != api.WebhookUnknown {
		t.Fatalf("webhooks of a missing CRD: %+v, want Degraded, not checked", w)
	}
}
