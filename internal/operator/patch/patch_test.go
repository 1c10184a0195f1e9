package patch_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/operator/patch"
)

// TestHelper_NoChangeWritesNothing: a reconcile that changes nothing, or sets a field to the value
// it has, or sets a condition as it stands, sends nothing to the API server.
func TestHelper_NoChangeWritesNothing(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("same")
	conditions.Set(&app.Status.Conditions, 1, conditions.Ready, metav1.ConditionTrue, "Available", "1 of 1 ready")
	if err := patch.NewHelper(f.get("same"), f.c).Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.rec.take()

	app = f.get("same")
	h := patch.NewHelper(app, f.c)
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	app.Spec.Port = 8080
	app.Labels["team"] = "a"
	app.Status.Phase = webappv1.PhaseReconciling
	conditions.Set(&app.Status.Conditions, 1, conditions.Ready, metav1.ConditionTrue, "Available", "1 of 1 ready")
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.wantWrites("same")
}

// TestHelper_StatusChangeSendsOnlyTheChangedStatusFields: one merge patch on the status
// subresource holding the changed fields alone; no resourceVersion, so no precondition.
func TestHelper_StatusChangeSendsOnlyTheChangedStatusFields(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("status")
	h := patch.NewHelper(app, f.c)
	app.Status.Phase = webappv1.PhaseReady
	app.Status.AvailableReplicas = 1
	app.Status.URL = ""
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.wantWrites("status", write{Method: "PATCH", Path: "/status", Body: map[string]any{
		"status": map[string]any{"phase": "Ready", "availableReplicas": 1, "url": nil},
	}})
	got := f.get("status")
	if got.Status.Phase != webappv1.PhaseReady || got.Status.AvailableReplicas != 1 || got.Status.URL != "" || got.Status.Replicas != 1 {
		t.Fatalf("stored status %+v", got.Status)
	}
	if app.ResourceVersion != got.ResourceVersion {
		t.Fatalf("the object holds resourceVersion %s, the server %s", app.ResourceVersion, got.ResourceVersion)
	}
}

// TestHelper_ObjectChangeSendsOnlyTheChangedFields: one merge patch on the object with the changed
// metadata and spec fields alone, and nothing on the status subresource.
func TestHelper_ObjectChangeSendsOnlyTheChangedFields(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("object")
	h := patch.NewHelper(app, f.c)
	app.Annotations = map[string]string{"slipway.dev/seen": "1"}
	app.Spec.Replicas = ptr.To[int32](3)
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.wantWrites("object", write{Method: "PATCH", Body: map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"slipway.dev/seen": "1"}},
		"spec":     map[string]any{"replicas": 3},
	}})
	got := f.get("object")
	if got.Annotations["slipway.dev/seen"] != "1" || *got.Spec.Replicas != 3 || got.Status.Phase != webappv1.PhaseReconciling {
		t.Fatalf("stored %+v %+v %+v", got.Annotations, got.Spec, got.Status)
	}
}

// TestHelper_ObjectAndStatusChangeSendEachOnlyTheirFields: the object patch carries the metadata
// and spec changes, the status patch the status changes alone, and the object ends as the server
// holds it with the status the reconcile computed.
func TestHelper_ObjectAndStatusChangeSendEachOnlyTheirFields(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("both")
	h := patch.NewHelper(app, f.c)
	app.Annotations = map[string]string{"slipway.dev/seen": "1"}
	app.Status.Phase = webappv1.PhaseReady
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.wantWrites("both",
		write{Method: "PATCH", Body: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"slipway.dev/seen": "1"}}}},
		write{Method: "PATCH", Path: "/status", Body: map[string]any{"status": map[string]any{"phase": "Ready"}}},
	)
	got := f.get("both")
	if got.Annotations["slipway.dev/seen"] != "1" || got.Status.Phase != webappv1.PhaseReady {
		t.Fatalf("stored %+v %+v", got.Annotations, got.Status)
	}
	if app.ResourceVersion != got.ResourceVersion || app.Status.Phase != webappv1.PhaseReady {
		t.Fatalf("the object after Patch: resourceVersion %s (server %s), phase %s", app.ResourceVersion, got.ResourceVersion, app.Status.Phase)
	}
}

// TestHelper_NextPatchSendsOnlyWhatChangedSince: after a Patch the helper compares with what it
// wrote, so calling it again sends nothing, and a later change is sent alone.
func TestHelper_NextPatchSendsOnlyWhatChangedSince(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("again")
	h := patch.NewHelper(app, f.c)
	app.Status.Phase = webappv1.PhaseReady
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.rec.take()
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.wantWrites("again")
	app.Status.Replicas = 2
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatal(err)
	}
	f.wantWrites("again", write{Method: "PATCH", Path: "/status", Body: map[string]any{"status": map[string]any{"replicas": 2}}})
}

// TestHelper_ConcurrentWritesAreMergedNotRefused: the helper's patches carry no resourceVersion,
// by design: a reconcile working from an older copy (the cache's) still writes (no Conflict, no
// retry), a field another writer changed meanwhile and the reconcile did not is kept, and a field
// both changed ends as the reconcile computed it (the controller owns its status).
func TestHelper_ConcurrentWritesAreMergedNotRefused(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("race")
	h := patch.NewHelper(app, f.c)

	theirs := app.DeepCopy()
	theirs.Labels["team"] = "b"
	theirs.Spec.Image = "registry.example/app:2"
	if err := f.other.Update(f.ctx, theirs); err != nil {
		t.Fatal(err)
	}
	theirs.Status.Replicas = 5
	theirs.Status.Phase = webappv1.PhaseFailed
	if err := f.other.Status().Update(f.ctx, theirs); err != nil {
		t.Fatal(err)
	}

	app.Annotations = map[string]string{"slipway.dev/seen": "1"}
	app.Status.Phase = webappv1.PhaseReady
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatalf("a patch from an older copy was refused: %v", err)
	}
	got := f.get("race")
	if got.Labels["team"] != "b" || got.Spec.Image != "registry.example/app:2" || got.Status.Replicas != 5 {
		t.Fatalf("the other writer's fields were not kept: %+v %+v %+v", got.Labels, got.Spec, got.Status)
	}
	if got.Annotations["slipway.dev/seen"] != "1" || got.Status.Phase != webappv1.PhaseReady {
		t.Fatalf("the reconcile's fields were not written: %+v %+v", got.Annotations, got.Status)
	}
}

// TestHelper_WriteBetweenTheTwoPatchesIsNoConflict: another writer that changes the object
// between the object's patch and the status patch does not make the status patch fail with a
// Conflict (it carries no resourceVersion), and its change is kept.
func TestHelper_WriteBetweenTheTwoPatchesIsNoConflict(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("between")
	h := patch.NewHelper(app, f.c)
	var otherErr error
	f.rec.after = func(w write) {
		if !strings.HasSuffix(w.Path, "/between") {
			return
		}
		theirs := &webappv1.WebApp{}
		if otherErr = f.other.Get(f.ctx, client.ObjectKeyFromObject(app), theirs); otherErr == nil {
			theirs.Labels["team"] = "b"
			otherErr = f.other.Update(f.ctx, theirs)
		}
	}
	app.Annotations = map[string]string{"slipway.dev/seen": "1"}
	app.Status.Phase = webappv1.PhaseReady
	if err := h.Patch(f.ctx, app); err != nil {
		t.Fatalf("the status patch after another write: %v", err)
	}
	f.rec.after = nil
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	got := f.get("between")
	if got.Labels["team"] != "b" || got.Annotations["slipway.dev/seen"] != "1" || got.Status.Phase != webappv1.PhaseReady {
		t.Fatalf("stored %+v %+v %+v", got.Labels, got.Annotations, got.Status)
	}
}

// TestHelper_DeletedObjectIsNotFound: a patch of an object deleted meanwhile returns the API
// server's NotFound through the wrapping, which the controllers ignore.
func TestHelper_DeletedObjectIsNotFound(t *testing.T) {
	f := newFixture(t)
	app := f.webApp("gone")
	h := patch.NewHelper(app, f.c)
	if err := f.other.Delete(f.ctx, app.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	app.Status.Phase = webappv1.PhaseReady
	err := h.Patch(f.ctx, app)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("got %v, want NotFound", err)
	}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(app), app); !apierrors.IsNotFound(err) {
		t.Fatalf("the patch recreated the object: %v", err)
	}
}

// TestHelper_LongConditionMessageIsWrittenOnce: a condition whose message conditions.Set cuts
// (beyond 4 KiB, here of 2-byte characters) is written by the first reconcile, and the next
// reconcile, computing the same message from the stored object, writes nothing.
func TestHelper_LongConditionMessageIsWrittenOnce(t *testing.T) {
	f := newFixture(t)
	msg := strings.Repeat("é", 3000) // cut at 4093 bytes, inside a character
	f.webApp("long")
	for i, wantWrites := range []int{1, 0} {
		app := f.get("long")
		h := patch.NewHelper(app, f.c)
		conditions.Set(&app.Status.Conditions, app.Generation, conditions.Ready, metav1.ConditionFalse, "Failed", msg)
		if err := h.Patch(f.ctx, app); err != nil {
			t.Fatal(err)
		}
		if got := len(f.rec.take()); got != wantWrites {
			t.Fatalf("reconcile %d: %d writes, want %d", i+1, got, wantWrites)
		}
	}
}
