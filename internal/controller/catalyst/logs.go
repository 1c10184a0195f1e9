package catalyst

import (
	"context"
	"fmt"
	"io"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LogReader reads the end of a container's log. The production reader asks the API server
// (pods/log); a container that never ran (kwok in tests and make dev) has no log to give.
type LogReader interface {
	Tail(ctx context.Context, namespace, pod, container string, maxBytes int64) (string, error)
}

// PodLogs reads logs through the API server.
type PodLogs struct{ Clientset kubernetes.Interface }

// Tail implements LogReader.
func (p PodLogs) Tail(ctx context.Context, namespace, pod, container string, maxBytes int64) (string, error) {
	req := p.Clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, LimitBytes: ptr.To(maxBytes), TailLines: ptr.To[int64](200),
	})
	rc, err := req.Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxBytes))
	return string(b), err
}

// Log tail bounds: what is read from the API server, and what goes into the condition message.
const (
	logReadBytes    = 64 << 10
	logMessageLines = 20
	logMessageBytes = 2048
)

// buildLogTail returns the end of the log of the build Job's last pod, or a note saying why
// there is none.
func buildLogTail(ctx context.Context, c client.Reader, logs LogReader, j *batchv1.Job) string {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
		return fmt.Sprintf("(log unavailable: listing the Job's pods: %v)", err)
	}
	var last *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if last == nil || last.CreationTimestamp.Before(&p.CreationTimestamp) {
			last = p
		}
	}
	if last == nil {
		return "(log unavailable: the Job's pods are gone)"
	}
	if logs == nil {
		return "(log unavailable: no log reader)"
	}
	tail, err := logs.Tail(ctx, last.Namespace, last.Name, buildContainer, logReadBytes)
	if err != nil && tail == "" {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	if strings.TrimSpace(tail) == "" {
		return "(the build wrote no log)"
	}
	return tailLines(tail, logMessageLines, logMessageBytes)
}

// tailLines keeps the last n lines of s, at most max bytes, cut at a line start.
func tailLines(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s = strings.Join(lines, "\n")
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return s
}
