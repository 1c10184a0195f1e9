package health

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/slipway-dev/slipway/internal/words"
)

// serviceWithoutEndpoint tells why a webhook's Service cannot be reached when it is for want of
// a ready endpoint: the Service missing, or its EndpointSlices holding no ready address — with
// what its selector matches (no pod: a selector that names nothing; pods none Ready: the webhook's
// pods are down). "" when the Service has a ready endpoint (the failure is elsewhere) or this
// cannot be read.
func serviceWithoutEndpoint(ctx context.Context, cl *clients, s *serviceRef) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	name := fmt.Sprintf("service %s/%s", s.namespace, s.name)
	svc, err := cl.kube.CoreV1().Services(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return name + " does not exist"
	}
	if err != nil {
		return ""
	}
	slices, err := cl.kube.DiscoveryV1().EndpointSlices(s.namespace).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + s.name})
	if err != nil {
		return ""
	}
	for _, sl := range slices.Items {
		for _, e := range sl.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready { // unset means ready
				return ""
			}
		}
	}
	if len(svc.Spec.Selector) == 0 {
		return name + " has no ready endpoint (it has no selector: its endpoints are set by hand)"
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector).String()
	pods, err := cl.kube.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Sprintf("%s has no ready endpoint (selector %s)", name, sel)
	}
	if len(pods.Items) == 0 {
		return fmt.Sprintf("%s has no ready endpoint: its selector %s matches no pod", name, sel)
	}
	ready := 0
	for i := range pods.Items {
		if podReady(&pods.Items[i]) {
			ready++
		}
	}
	if ready == 0 {
		return fmt.Sprintf("%s has no ready endpoint: its selector %s matches %s, none Ready", name, sel, words.Count(len(pods.Items), "pod"))
	}
	return fmt.Sprintf("%s has no ready endpoint: its selector %s matches %s, %d Ready but not yet among its endpoints",
		name, sel, words.Count(len(pods.Items), "pod"), ready)
}
