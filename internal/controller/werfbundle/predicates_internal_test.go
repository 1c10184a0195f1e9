package werfbundle

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

// TestManagedJobs_PassOnlyWhatABundleActsOn: a managed Job's end, removal and start of removal
// reconcile its bundle; its creation and its progress do not, unless it is first seen finished.
func TestManagedJobs_PassOnlyWhatABundleActsOn(t *testing.T) {
	job := func(managed bool, conds ...batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "app-apply-1", Namespace: "team"}}
		if managed {
			j.Labels = map[string]string{LabelComponent: ComponentValue, LabelBundleName: "app", LabelBundleNamespace: "team"}
		}
		for _, c := range conds {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return j
	}
	running := job(true)
	progressed := job(true)
	progressed.Status.Active, progressed.Status.Ready = 1, new(int32(1))
	deleting := job(true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}

	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"created running", managedJobs.Create(event.CreateEvent{Object: running}), false},
		{"first seen complete", managedJobs.Create(event.CreateEvent{Object: job(true, batchv1.JobComplete)}), true},
		{"not slipway's, complete", managedJobs.Create(event.CreateEvent{Object: job(false, batchv1.JobComplete)}), false},
		{"progress", managedJobs.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: progressed}), false},
		{"completed", managedJobs.Update(event.UpdateEvent{ObjectOld: progressed, ObjectNew: job(true, batchv1.JobComplete)}), true},
		{"failed", managedJobs.Update(event.UpdateEvent{ObjectOld: progressed, ObjectNew: job(true, batchv1.JobFailed)}), true},
		{"removal started", managedJobs.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: deleting}), true},
		{"deleted", managedJobs.Delete(event.DeleteEvent{Object: running}), true},
		{"not slipway's, deleted", managedJobs.Delete(event.DeleteEvent{Object: job(false)}), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: passed %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestBundleChanges_PassThePushAnnotation: the push receiver's annotation, written by whichever
// replica took the delivery, reaches the leader's controller; status writes do not.
func TestBundleChanges_PassThePushAnnotation(t *testing.T) {
	bundle := func(gen int64, annotations map[string]string, phase werfv1.Phase) *werfv1.WerfBundle {
		return &werfv1.WerfBundle{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team", Generation: gen, Annotations: annotations},
			Status:     werfv1.WerfBundleStatus{Phase: phase},
		}
	}
	plain := bundle(1, nil, werfv1.PhaseSynced)
	pushed := bundle(1, map[string]string{werfv1.PushReceivedAnnotation: "2026-03-02T10:15:04.118220631Z"}, werfv1.PhaseSynced)
	pushedAgain := bundle(1, map[string]string{werfv1.PushReceivedAnnotation: "2026-03-02T10:16:00.000000001Z"}, werfv1.PhaseSynced)

	for _, tc := range []struct {
		name     string
		old, new *werfv1.WerfBundle
		want     bool
	}{
		{"first push", plain, pushed, true},
		{"another push", pushed, pushedAgain, true},
		{"reconcile-now", plain, bundle(1, map[string]string{werfv1.ReconcileNowAnnotation: "1"}, werfv1.PhaseSynced), true},
		{"spec change", plain, bundle(2, nil, werfv1.PhaseSynced), true},
		{"status only", pushed, bundle(1, pushed.Annotations, werfv1.PhaseSyncing), false},
	} {
		if got := bundleChanges.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestEnqueueOutcome_RecordsAfterTheFirstDeploys: a finished Job's bundle is queued behind the
// bundles waiting for their first Job (queued by the initial list at handler.LowPriority), so a
// burst's Job creates are not held up by the outcomes of the Jobs already done.
func TestEnqueueOutcome_RecordsAfterTheFirstDeploys(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("outcome-test")
	defer q.ShutDown()
	waiting := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "waiting"}}
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, waiting)

	done := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "done-apply-1", Namespace: "team",
		Labels: map[string]string{LabelComponent: ComponentValue, LabelBundleName: "done", LabelBundleNamespace: "team"}}}
	enqueueOutcome(jobToBundle).Update(context.Background(), event.UpdateEvent{ObjectOld: done, ObjectNew: done}, q)

	for i, want := range []struct {
		name     string
		priority int
	}{{"waiting", handler.LowPriority}, {"done", outcomePriority}} {
		got, priority, _ := q.GetWithPriority()
		if got.Name != want.name || priority != want.priority {
			t.Errorf("item %d: %s at priority %d, want %s at %d", i, got.Name, priority, want.name, want.priority)
		}
		q.Done(got)
	}
}
