package install

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodProblem checks the reason and message of pods in the states kubelets (and kwok's
// stages) report: crash loops and image pulls with their last exit, failed containers, failed,
// unready and healthy pods.
func TestPodProblem(t *testing.T) {
	t.Parallel()
	waiting := func(reason, msg string, restarts int32, last *corev1.ContainerStateTerminated) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "manager", RestartCount: restarts,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
			LastTerminationState: corev1.ContainerState{Terminated: last},
		}}}
	}
	for _, tc := range []struct {
		name           string
		status         corev1.PodStatus
		reason, detail string
	}{
		{"crash loop", waiting("CrashLoopBackOff", "back-off 40s restarting failed container", 4,
			&corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}),
			"CrashLoopBackOff", "container manager CrashLoopBackOff: 4 restarts: back-off 40s restarting failed container: last exit code 2: Error"},
		// With terminationMessagePolicy FallbackToLogsOnError the message is the log's tail: its
		// last line says why.
		{"crash loop, the log's tail", waiting("CrashLoopBackOff", "back-off 10s restarting failed container", 1,
			&corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "starting\nerror: no such flag --leader-elect-id\n"}),
			"CrashLoopBackOff", "container manager CrashLoopBackOff: 1 restarts: back-off 10s restarting failed container: last exit code 1: Error: error: no such flag --leader-elect-id"},
		{"image pull", waiting("ImagePullBackOff", `Back-off pulling image "registry.example/op:v9"`, 0, nil),
			"ImagePullBackOff", `container manager ImagePullBackOff: Back-off pulling image "registry.example/op:v9"`},
		{"container failed", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "manager",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "boom"}}}}},
			"Error", "container manager terminated (Error, exit code 1): boom"},
		{"pod failed", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"},
			"Evicted", "pod failed: Evicted: low on memory"},
		{"unready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}},
			"NotReady", "not ready: ContainersNotReady"},
		{"ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			"", ""},
	} {
		reason, detail := podProblem(&corev1.Pod{Status: tc.status})
		if reason != tc.reason || detail != tc.detail {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, reason, detail, tc.reason, tc.detail)
		}
	}
}
