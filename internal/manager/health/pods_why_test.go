package health

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestWhyNotReady_WhatAKubeletReports: the statuses a kubelet writes for a container that
// crash-loops (its last exit and the termination message's last line), one that cannot start,
// an init container that fails, and a pod never scheduled are said in the pod's one message.
func TestWhyNotReady_WhatAKubeletReports(t *testing.T) {
	crashed := corev1.ContainerStatus{Name: "manager", RestartCount: 2,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "back-off 20s restarting failed container=manager pod=op-1_ns(uid)"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			Message: "starting\nerror: no such flag --leader-elect-id\n"}}}
	for _, tc := range []struct {
		name string
		pod  corev1.PodStatus
		want string
	}{
		{"crash loop", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{crashed}},
			"container manager in CrashLoopBackOff, restarted 2 times, last exit code 1: error: no such flag --leader-elect-id"},
		{"config error", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "manager",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "op-tls" not found`}}}}},
			`container manager in CreateContainerConfigError (secret "op-tls" not found)`},
		{"just exited", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", RestartCount: 1,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "starting\npanic: boom\n"}}}}},
			"container manager terminated (Error, exit code 1): panic: boom, restarted 1 time"},
		{"init container failed", corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "migrate", RestartCount: 1,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}},
			"init container migrate terminated (Error, exit code 2), restarted 1 time; container manager in PodInitializing"},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available"}}},
			"PodScheduled False: Unschedulable 0/2 nodes are available"},
	} {
		if got := whyNotReady(context.Background(), nil, &corev1.Pod{Status: tc.pod}); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	if got := lastLine("a\nb\n\n"); !strings.EqualFold(got, "b") {
		t.Errorf("lastLine = %q", got)
	}
}
