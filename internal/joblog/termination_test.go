package joblog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/joblog"
)

type failingLogs struct{ err error }

func (f failingLogs) Tail(context.Context, string, string, string, int64) (string, error) {
	return "", f.err
}

type logs string

func (l logs) Tail(context.Context, string, string, string, int64) (string, error) {
	return string(l), nil
}

func terminated(name, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: message}}}
}

// TestContainerTail_TerminationMessageStandsInForAnUnreadableLog: the log is read when it can be;
// when pods/log fails, the container's termination message (FallbackToLogsOnError: the log's end)
// comes instead, after a line naming the error, and still ends with the log's last line; without
// a message the error is returned.
func TestContainerTail_TerminationMessageStandsInForAnUnreadableLog(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{terminated("fetch", "fetch: no such revision\n")},
		ContainerStatuses:     []corev1.ContainerStatus{terminated("werf", "step 1\nError: UPGRADE FAILED: timeout\n")},
	}}
	ctx := context.Background()
	if got, err := joblog.ContainerTail(ctx, logs("the whole log\n"), pod, "werf", 100); err != nil || got != "the whole log\n" {
		t.Errorf("a readable log: %q, %v", got, err)
	}
	unreachable := failingLogs{errors.New(`dial tcp 10.0.0.9:10250: connect: connection refused`)}
	got, err := joblog.ContainerTail(ctx, unreachable, pod, "werf", 100)
	if err != nil || !strings.HasPrefix(got, joblog.TerminationNote+"(dial tcp 10.0.0.9:10250: connect: connection refused)]\n") ||
		!strings.HasSuffix(got, "\nError: UPGRADE FAILED: timeout\n") {
		t.Errorf("an unreadable log: %q, %v", got, err)
	}
	if got, err := joblog.ContainerTail(ctx, nil, pod, "fetch", 100); err != nil || !strings.HasSuffix(got, "]\nfetch: no such revision\n") {
		t.Errorf("an init container without a log reader: %q, %v", got, err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("werf", "")}
	if got, err := joblog.ContainerTail(ctx, unreachable, pod, "werf", 100); !errors.Is(err, unreachable.err) || got != "" {
		t.Errorf("an unreadable log and no termination message: %q, %v; want the read's error", got, err)
	}
}
