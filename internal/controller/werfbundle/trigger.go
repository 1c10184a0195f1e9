package werfbundle

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
)

// repositoryKeys indexes a bundle by its normalised repository, for the push webhook.
func repositoryKeys(o client.Object) []string {
	return []string{receiver.NormalizeRepository(o.(*werfv1.WerfBundle).Spec.Registry.URL)}
}

// Trigger makes every bundle watching repository poll at once (receiver.Trigger). The tag is not
// trusted: the poll asks the registry, so a forged push cannot deploy anything.
func (r *Reconciler) Trigger(ctx context.Context, repository, _ string) int {
	var list werfv1.WerfBundleList
	if err := r.List(ctx, &list, client.MatchingFields{indexRepository: receiver.NormalizeRepository(repository)}); err != nil {
		return 0
	}
	n := 0
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.Suspend {
			continue
		}
		r.polls.trigger(client.ObjectKeyFromObject(b))
		select {
		case r.triggers <- event.GenericEvent{Object: b}:
			n++
		case <-ctx.Done():
			return n
		}
	}
	return n
}
