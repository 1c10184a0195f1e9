package catalyst

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/joblog/ctrlpods"
)

// LogReader reads the end of a container's log (see package joblog).
type LogReader = joblog.Reader

// PodLogs reads logs through the API server.
type PodLogs = joblog.PodLogs

// Log tail bounds: what is read from the API server, and what goes into the condition message.
const (
	logReadBytes    = 64 << 10
	logMessageLines = 20
	logMessageBytes = 2048
)

// buildLogTail returns the end of the log of the build Job's last pod (of the container that
// failed: fetch, build or push; from its termination message when the log cannot be read), or a
// note saying why there is none.
func buildLogTail(ctx context.Context, c client.Reader, logs LogReader, j *batchv1.Job) string {
	last, err := joblog.LastPod(ctx, ctrlpods.Pods(c), j)
	if err != nil {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	container := failedContainer(last)
	tail, err := joblog.ContainerTail(ctx, logs, last, container, logReadBytes)
	if err != nil && tail == "" {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	if strings.TrimSpace(tail) == "" {
		return "(the build wrote no log)"
	}
	if container != buildContainer {
		tail = "(container " + container + ")\n" + tail
	}
	return tailLines(tail, logMessageLines, logMessageBytes)
}

// failedContainer names the first container of the pod that ended with an error, in the order
// they ran; the build container when none did.
func failedContainer(pod *corev1.Pod) string {
	for _, st := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
			return st.Name
		}
	}
	return buildContainer
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
