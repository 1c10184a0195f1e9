package joblog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ContainerTail is the end of a finished container's log, read with logs (pods/log through the
// API server, which asks the node's kubelet). When that read fails (a kubelet the API server
// cannot reach, a node gone or being replaced) and the container left a termination message, the
// message stands in for the log, after a line saying so: the Jobs' containers set
// terminationMessagePolicy FallbackToLogsOnError, so for a failed container the kubelet puts the
// end of its log (its last 80 lines, at most 2 KiB) in the pod's status, which the API server
// holds and needs no connection to the node. Either way the tail ends with the log's last line.
func ContainerTail(ctx context.Context, logs Reader, pod *corev1.Pod, container string, maxBytes int64) (string, error) {
	var tail string
	err := errors.New("no log reader")
	if logs != nil {
		tail, err = logs.Tail(ctx, pod.Namespace, pod.Name, container, maxBytes)
	}
	if err == nil {
		return tail, nil
	}
	msg := TerminationMessage(pod, container)
	if strings.TrimSpace(msg) == "" {
		return tail, err
	}
	return fmt.Sprintf("%s(%v)]\n%s", TerminationNote, err, msg), nil
}

// TerminationNote starts a tail taken from a termination message, followed by why the log could
// not be read.
const TerminationNote = "[the end of the log from the container's termination message: the pod log could not be read "

// TerminationMessage is the termination message of the pod's container (or init container)
// named container, empty when it has not terminated or left none.
func TerminationMessage(pod *corev1.Pod, container string) string {
	for _, st := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if st.Name == container && st.State.Terminated != nil {
			return st.State.Terminated.Message
		}
	}
	return ""
}
