package werfbundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
)

// receiverFieldOwner names the push receiver's writes in managedFields.
const receiverFieldOwner = client.FieldOwner("slipway-werfbundle-receiver")

// repositoryKeys indexes a bundle by its normalised repository, for the push webhook.
func repositoryKeys(o client.Object) []string {
	return []string{receiver.NormalizeRepository(o.(*werfv1.WerfBundle).Spec.Registry.URL)}
}

// Trigger records a push on every non-suspended bundle watching repository (receiver.Trigger):
// it sets werfv1.PushReceivedAnnotation to the time of arrival with a merge patch, and the
// leader's reconcile makes the poll due when it sees a new value. It runs on every replica: the
// bundles come from the cache, and once Trigger returns without an error the push is in the API
// server, so it survives the leader's death. A failed patch is returned (the receiver logs it and
// answers 503, so the sender retries); the other bundles are still marked.
//
// The tag is not trusted: the poll asks the registry, so a forged push cannot deploy anything.
func (r *Reconciler) Trigger(ctx context.Context, repository, _ string) (int, error) {
	r.once.Do(r.defaults)
	var list werfv1.WerfBundleList
	if err := r.List(ctx, &list, client.MatchingFields{indexRepository: receiver.NormalizeRepository(repository)}); err != nil {
		return 0, fmt.Errorf("listing WerfBundles for %s: %w", repository, err)
	}
	at := r.Clock.Now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{werfv1.PushReceivedAnnotation: at}}})
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.Suspend || !b.DeletionTimestamp.IsZero() {
			continue
		}
		err := r.Patch(ctx, b, client.RawPatch(types.MergePatchType, body), receiverFieldOwner)
		switch {
		case err == nil:
			n++
		case apierrors.IsNotFound(err):
			// Deleted since the cache saw it: nothing to poll for.
		default:
			errs = append(errs, fmt.Errorf("marking WerfBundle %s/%s: %w", b.Namespace, b.Name, err))
		}
	}
	return n, errors.Join(errs...)
}

// stepPush makes the poll due when the push receiver recorded a push not handled yet, and
// records it as handled. A push only polls: it never retries a failed revision.
func (r *Reconciler) stepPush(s *scope) {
	b := s.bundle
	if v := b.Annotations[werfv1.PushReceivedAnnotation]; v != "" && v != b.Status.LastHandledPush {
		b.Status.LastHandledPush = v
		r.polls.trigger(client.ObjectKeyFromObject(b))
	}
}
