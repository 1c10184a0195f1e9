package catalyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func waitingPod(name, container, reason, message string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: container, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
	}}}}
}

// TestPodProblems_SaysWhyPodsAreNotComing: image pulls, crash loops, configuration errors and
// unschedulable pods are named with the pod and container; progress is not a problem.
func TestPodProblems_SaysWhyPodsAreNotComing(t *testing.T) {
	crash := waitingPod("app-1", "app", "CrashLoopBackOff", "back-off 40s restarting failed container")
	crash.Status.ContainerStatuses[0].RestartCount = 4
	crash.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-3"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory.",
	}}}}
	initPull := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-4"}, Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{
		Name: "migrate", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "manifest unknown"}},
	}}}}
	deleting := waitingPod("app-5", "app", "ImagePullBackOff", "old pod")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"none", nil, ""},
		{"still creating", []corev1.Pod{waitingPod("app-1", "app", "ContainerCreating", "")}, ""},
		{"image pull", []corev1.Pod{waitingPod("app-1", "app", "ImagePullBackOff", `Back-off pulling image "registry.example.dev/org/app:abc"`)},
			`pod app-1 container app: ImagePullBackOff: Back-off pulling image "registry.example.dev/org/app:abc"`},
		{"crash loop with the last exit", []corev1.Pod{crash},
			"pod app-1 container app: CrashLoopBackOff: back-off 40s restarting failed container (restarted 4 times, last exit code 2, Error)"},
		{"one problem of many pods is said once",
			[]corev1.Pod{waitingPod("app-1", "app", "ErrImagePull", "denied"), waitingPod("app-2", "app", "ErrImagePull", "denied")},
			"pod app-1 container app: ErrImagePull: denied (and 1 more pods)"},
		{"config error, unschedulable, init container",
			[]corev1.Pod{waitingPod("app-2", "app", "CreateContainerConfigError", `secret "db" not found`), unschedulable, initPull},
			`pod app-2 container app: CreateContainerConfigError: secret "db" not found; pod app-3 cannot be scheduled: 0/3 nodes are available: 3 Insufficient memory.; pod app-4 container migrate: ErrImagePull: manifest unknown`},
		{"a deleted pod is not looked at", []corev1.Pod{deleting}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podProblems(tc.pods); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestWorkloadProblem_ReadsReplicaFailure: a Deployment carries its ReplicaSet's FailedCreate
// (the quota, Pod Security or another admission refused the pod) as a ReplicaFailure condition.
func TestWorkloadProblem_ReadsReplicaFailure(t *testing.T) {
	deployment := func(conds ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "app"}, "status": map[string]any{"conditions": conds}}}
	}
	quota := `pods "app-5d8f" is forbidden: failed quota: catalyst-quota: must specify limits.cpu for: app; limits.memory for: app`
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
		want string
	}{
		{"no conditions", deployment(), ""},
		{"progressing only", deployment(map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetCreated"}), ""},
		{"quota refused", deployment(map[string]any{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": quota}),
			"pods cannot be created (FailedCreate): " + quota},
		{"resolved failure", deployment(map[string]any{"type": "ReplicaFailure", "status": "False", "reason": "FailedCreate", "message": quota}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := workloadProblem(tc.u); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestNotCurrent_FailedAfterTheProgressDeadline: past its progress deadline a Deployment is
// Failed (kstatus) and the environment with it, and the message keeps why the pods did not come.
func TestNotCurrent_FailedAfterTheProgressDeadline(t *testing.T) {
	e := inventoryEntry{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"}
	why := "pods cannot be created (FailedCreate): violates PodSecurity"
	got := notCurrent(e, &status.Result{Status: status.FailedStatus, Message: "Progress deadline exceeded"}, why)
	if got.reason != "DeploymentFailed" || !strings.Contains(got.message, "Deployment/app failed: Progress deadline exceeded; "+why) {
		t.Errorf("got %+v", got)
	}
	got = notCurrent(e, &status.Result{Status: status.InProgressStatus, Message: "Replicas: 0/2"}, why)
	if got.reason != "Deploying" || got.message != "Waiting for Deployment/app: Replicas: 0/2; "+why {
		t.Errorf("got %+v", got)
	}
}

// TestFailedCreateEvent_NewestWarning: a StatefulSet's or DaemonSet's FailedCreate events say
// why its pods are not coming; the newest warning counts.
func TestFailedCreateEvent_NewestWarning(t *testing.T) {
	ev := func(typ, reason, msg string, at int64) corev1.Event {
		return corev1.Event{Type: typ, Reason: reason, Message: msg, LastTimestamp: metav1.Time{Time: time.Unix(at, 0)}}
	}
	for _, tc := range []struct {
		name   string
		events []corev1.Event
		want   string
	}{
		{"none", nil, ""},
		{"other reasons", []corev1.Event{ev("Normal", "SuccessfulCreate", "create Pod db-0", 1), ev("Warning", "FailedDelete", "x", 2)}, ""},
		{"the newest warning", []corev1.Event{ev("Warning", "FailedCreate", "old: exceeded quota", 1), ev("Warning", "FailedCreate", "create Pod db-0 in StatefulSet db failed: violates PodSecurity", 5),
			ev("Normal", "FailedCreate", "not a warning", 9)},
			"pods cannot be created (FailedCreate): create Pod db-0 in StatefulSet db failed: violates PodSecurity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := failedCreateEvent(tc.events); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
