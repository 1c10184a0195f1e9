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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Reader reads the end of a container's log. The production reader asks the API server
// (pods/log); a container that never ran (kwok in tests and make dev) has no log to give.
type Reader interface {
	Tail(ctx context.Context, namespace, pod, container string, maxBytes int64) (string, error)
}

// PodLogs reads logs through the API server. REST is a core/v1 REST client: a typed clientset's
// CoreV1().RESTClient() in the controllers, NewPodLogs's in the CLI, which links no clientset.
type PodLogs struct{ REST rest.Interface }

// coreScheme knows core/v1 alone: the log request's options and the API's errors. client-go's
// scheme of every built-in group would put them all into the CLI, which reads logs through here.
var coreScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// coreParams encodes the log request's options into its query.
var coreParams = runtime.NewParameterCodec(coreScheme)

// NewPodLogs reads logs with a core/v1 REST client of cfg.
func NewPodLogs(cfg *rest.Config) (PodLogs, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(coreScheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return PodLogs{}, err
	}
	return PodLogs{REST: rc}, nil
}

// Stream opens the log of a pod's container (pods/log), as kubectl logs reads it.
func (p PodLogs) Stream(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return p.REST.Get().Namespace(namespace).Resource("pods").Name(pod).SubResource("log").
		VersionedParams(opts, coreParams).Stream(ctx)
}

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
	rc, err := p.Stream(ctx, namespace, pod, &corev1.PodLogOptions{Container: container, TailLines: ptr.To(maxBytes + 1)})
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

// PodLister lists a namespace's pods that carry every one of labels. The controllers list with
// their controller-runtime client (package joblog/ctrlpods), the CLI with its own light one: the
// package itself links no client, so that the CLI need not link controller-runtime's.
type PodLister interface {
	ListPods(ctx context.Context, namespace string, labels map[string]string) ([]corev1.Pod, error)
}

// LastPod returns the Job's most recently created pod.
func LastPod(ctx context.Context, c PodLister, j *batchv1.Job) (*corev1.Pod, error) {
	pods, err := c.ListPods(ctx, j.Namespace, map[string]string{batchv1.JobNameLabel: j.Name})
	if err != nil {
		return nil, fmt.Errorf("listing the Job's pods: %w", err)
	}
	var last *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if last == nil || last.CreationTimestamp.Before(&p.CreationTimestamp) {
			last = p
		}
	}
	if last == nil {
		return nil, ErrNoPods
	}
	return last, nil
}
