package werfbundle

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
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
