//go:build e2e

package werfbundle_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

// designExample is the WerfBundle of the design document (werf-operator-design.md, "WerfBundle
// CRD Example"), copied verbatim, status included.
const designExample = "testdata/design-example.yaml"

// applyDesignExample server-side applies u (as kubectl apply --server-side would) and reads it
// back as the API server stored it.
func applyDesignExample(ctx context.Context, t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetNamespace()}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("design-example"), client.ForceOwnership); err != nil {
		t.Fatalf("applying the design's example: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestWerfBundle_DesignExampleAppliesWithItsDefaults: the design's example WerfBundle is accepted
// as written by the project's CRD, and every value it shows for pollInterval, resourceLimits,
// logRetentionDays and driftDetection is also what the CRD defaults to when the field is left out,
// under the field names the design uses.
func TestWerfBundle_DesignExampleAppliesWithItsDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, err := os.ReadFile(designExample)
	if err != nil {
		t.Fatal(err)
	}
	example := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &example.Object); err != nil {
		t.Fatal(err)
	}
	if example.GetName() != "my-app" || example.GroupVersionKind() != werfv1.GroupVersion.WithKind("WerfBundle") {
		t.Fatalf("%s holds %s %s, want the design's WerfBundle my-app", designExample, example.GroupVersionKind(), example.GetName())
	}

	// The values the design shows, at its paths. Durations are stored as written.
	shown := []struct {
		path []string
		want any
	}{
		{[]string{"spec", "registry", "pollInterval"}, "15m"},
		{[]string{"spec", "converge", "resourceLimits", "cpu"}, "1"},
		{[]string{"spec", "converge", "resourceLimits", "memory"}, "1Gi"},
		{[]string{"spec", "converge", "logRetentionDays"}, int64(7)},
		{[]string{"spec", "converge", "driftDetection", "interval"}, "15m"},
		{[]string{"spec", "converge", "driftDetection", "maxRetries"}, int64(5)},
	}
	check := func(t *testing.T, got *unstructured.Unstructured) {
		t.Helper()
		for _, s := range shown {
			v, found, err := unstructured.NestedFieldNoCopy(got.Object, s.path...)
			if err != nil || !found || v != s.want {
				t.Errorf("%v = %v (%T, found %t, %v), want %v", s.path, v, v, found, err, s.want)
			}
		}
	}

	t.Run("as written", func(t *testing.T) {
		got := applyDesignExample(ctx, t, example.DeepCopy())
		check(t, got)
		// Everything else the example says is kept too; its status is not the client's to set.
		b := &werfv1.WerfBundle{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(got), b); err != nil {
			t.Fatal(err)
		}
		r, c := b.Spec.Registry, b.Spec.Converge
		if r.URL != "ghcr.io/org/bundle" || r.SecretRef == nil || r.SecretRef.Name != "registry-creds" || r.VersionConstraint != ">=1.0.0" {
			t.Errorf("registry = %+v", r)
		}
		if c.TargetNamespace != "my-app-prod" || c.ServiceAccountName != "werf-converge-sa" || !c.DriftDetection.Enabled {
			t.Errorf("converge = %+v", c)
		}
		if len(c.ValuesFrom) != 2 || c.ValuesFrom[0].ConfigMapRef == nil || c.ValuesFrom[0].ConfigMapRef.Name != "app-values" ||
			c.ValuesFrom[1].SecretRef == nil || c.ValuesFrom[1].SecretRef.Name != "app-secrets" || !c.ValuesFrom[1].SecretRef.Optional {
			t.Errorf("valuesFrom = %+v", c.ValuesFrom)
		}
		if c.JobTTLSecondsAfterFinished == nil || *c.JobTTLSecondsAfterFinished != 3600 {
			t.Errorf("jobTTLSecondsAfterFinished = %v, want the default 3600", c.JobTTLSecondsAfterFinished)
		}
		if b.Status.Phase != "" || b.Status.LastAppliedTag != "" {
			t.Errorf("status = %+v, want none: the status subresource ignores what a client sends", b.Status)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		u := example.DeepCopy()
		u.SetName("my-app-defaults")
		for _, s := range shown {
			unstructured.RemoveNestedField(u.Object, s.path...)
		}
		// resourceLimits left out whole: its own default holds both limits.
		unstructured.RemoveNestedField(u.Object, "spec", "converge", "resourceLimits")
		// What is left of driftDetection: enabled.
		if dd, _, _ := unstructured.NestedMap(u.Object, "spec", "converge", "driftDetection"); len(dd) != 1 {
			t.Fatalf("driftDetection without its defaulted fields = %v", dd)
		}
		check(t, applyDesignExample(ctx, t, u))
	})
}
