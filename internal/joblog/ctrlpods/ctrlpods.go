// Package ctrlpods lists pods for joblog.LastPod with a controller-runtime client, the
// controllers' way; package joblog itself links no client (the CLI lists with a lighter one).
package ctrlpods

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/joblog"
)

// Pods is a joblog.PodLister that lists with c (a cached client or the API reader).
func Pods(c client.Reader) joblog.PodLister { return lister{c} }

type lister struct{ c client.Reader }

func (l lister) ListPods(ctx context.Context, namespace string, labels map[string]string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := l.c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		return nil, err
	}
	return pods.Items, nil
}
