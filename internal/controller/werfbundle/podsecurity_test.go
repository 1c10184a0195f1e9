//go:build e2e

package werfbundle_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

// TestWerfBundle_ApplyJobIsAdmittedUnderRestrictedPodSecurity: the target namespace enforces the
// Pod Security Standard "restricted"; the API server's PodSecurity admission admits the apply
// Job's pod, which the Job controller creates (no FailedCreate), and the deploy completes.
func TestWerfBundle_ApplyJobIsAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	ns := &corev1.Namespace{}
	if err := f.c.Get(f.ctx, clientKey(f.target), ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	ns.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if err := f.c.Update(f.ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The namespace does refuse what restricted forbids: a pod without its security context.
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: f.target},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
	}
	if err := f.c.Create(f.ctx, plain); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod without a security context in the restricted namespace: %v, want a PodSecurity refusal", err)
	}

	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	f.start()
	// Synced, unless the Job controller reports that it cannot create the pod: then at once.
	var got *werfv1.WerfBundle
	f.eventually("the bundle is Synced or its Job's pod refused", func() bool {
		if refused := failedCreates(f, b); refused != "" {
			t.Fatalf("the Job's pod was refused: %s", refused)
		}
		got = f.get(b)
		return got.Status.Phase == werfv1.PhaseSynced && got.Status.LastAppliedTag == "1.0.0"
	})

	jobs := f.jobs(b)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want 1", len(jobs))
	}
	job := jobs[0]
	var pods corev1.PodList
	if err := f.c.List(f.ctx, &pods, client.InNamespace(f.target), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Errorf("Job %s has no pods", job.Name)
	}
	if refused := failedCreates(f, b); refused != "" {
		t.Errorf("the Job's pod was refused: %s", refused)
	}
	if got.Status.LastFinishedJob != job.Name {
		t.Errorf("lastFinishedJob = %q, want %q", got.Status.LastFinishedJob, job.Name)
	}
}

// failedCreates is the notes of the FailedCreate Events of the bundle's Jobs (the Job controller
// could not create a pod), empty when there are none.
func failedCreates(f *fixture, b *werfv1.WerfBundle) string {
	f.t.Helper()
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.target)); err != nil {
		f.t.Fatal(err)
	}
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "Job" && strings.HasPrefix(e.Regarding.Name, b.Name+"-") && e.Reason == "FailedCreate" {
			notes = append(notes, e.Regarding.Name+": "+e.Note)
		}
	}
	return strings.Join(notes, "; ")
}
