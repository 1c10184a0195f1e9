// Package joblog reads what a finished Job's pod wrote: the Job's last pod and the end of its
// container's log. Every system that runs Jobs (WerfBundle converges, Catalyst builds) reads
// logs through it. kwok runs no container: controller tests give their own Reader at this one
// boundary, or bind the Job's pods to a joblogtest.LogNode, which serves logs through the real
// pods/log.
package joblog

import (
	"context"
	"errors"
	"fmt"
	"io"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader reads the end of a container's log. The production reader asks the API server
// (pods/log); a container that never ran (kwok in tests and make dev) has no log to give.
type Reader interface {
	Tail(ctx context.Context, namespace, pod, container string, maxBytes int64) (string, error)
}

// PodLogs reads logs through the API server.
type PodLogs struct{ Clientset kubernetes.Interface }

// CutNote starts what Tail returns when the log was longer than maxBytes: the start was cut.
const CutNote = "[the start of this log was cut]\n"

// Tail implements Reader: the end of the log, the last line always included, at most maxBytes
// (CutNote counted). A longer log is cut at a line start, or, when its last line alone is longer,
// inside that line, and then starts with CutNote.
//
// pods/log cannot be asked for the last N bytes: the kubelet applies tailLines first and then
// returns the first limitBytes of that tail, which loses the end of a long log, where a failing
// werf or Kaniko run writes its error. So Tail asks for the last maxBytes+1 lines only (every line
// has at least one byte, newline included, so they hold the last maxBytes bytes, and a log no longer
// than maxBytes comes whole) and keeps the end of the stream while reading it, in at most about
// 2×maxBytes of memory whatever the stream's size.
func (p PodLogs) Tail(ctx context.Context, namespace, pod, container string, maxBytes int64) (string, error) {
	if maxBytes <= 0 {
		return "", nil
	}
	req := p.Clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, TailLines: ptr.To(maxBytes + 1),
	})
	rc, err := req.Stream(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = rc.Close() }()
	end := newTailBuffer(int(maxBytes))
	_, err = io.Copy(end, rc)
	return end.String(), err
}

// ErrNoPods says the Job's pods are gone (deleted, or never created).
var ErrNoPods = errors.New("the Job's pods are gone")

// LastPod returns the Job's most recently created pod.
func LastPod(ctx context.Context, c client.Reader, j *batchv1.Job) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
		return nil, fmt.Errorf("listing the Job's pods: %w", err)
	}
	var last *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if last == nil || last.CreationTimestamp.Before(&p.CreationTimestamp) {
			last = p
		}
	}
	if last == nil {
		return nil, ErrNoPods
	}
	return last, nil
}
