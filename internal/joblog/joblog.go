// Package joblog reads what a finished Job's pod wrote: the Job's last pod and the end of its
// container's log. Every system that runs Jobs (WerfBundle converges, Catalyst builds) reads
// logs through it; kwok runs no container, so tests give their own Reader at this one boundary.
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

// Tail implements Reader: at most the last 2,000 lines and maxBytes.
func (p PodLogs) Tail(ctx context.Context, namespace, pod, container string, maxBytes int64) (string, error) {
	req := p.Clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, LimitBytes: ptr.To(maxBytes), TailLines: ptr.To[int64](2000),
	})
	rc, err := req.Stream(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(io.LimitReader(rc, maxBytes))
	return string(b), err
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
