package werfbundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
)

// receiverFieldOwner names the push receiver's writes in managedFields.
const receiverFieldOwner = client.FieldOwner("slipway-werfbundle-receiver")

// repositoryField is the CRD's selectable field a shard's push receiver lists bundles by (see
// watching); triggerPageSize bounds each page of that list.
const (
	repositoryField = "status.repository"
	triggerPageSize = 500
)

// repositoryKeys indexes a bundle by its normalised repository, for the push webhook.
func repositoryKeys(o client.Object) []string {
	return []string{receiver.NormalizeRepository(o.(*werfv1.WerfBundle).Spec.Registry.URL)}
}

// Trigger records a push on every non-suspended bundle watching repository (receiver.Trigger):
// it sets werfv1.PushReceivedAnnotation to the time of arrival with a merge patch, and the
// reconcile of the replica (or shard) that holds the bundle makes the poll due when it sees a new
// value. It runs on every replica: once Trigger returns without an error the push is in the API
// server, so it survives the death of the one that reconciles the bundle. A failed patch is
// returned (the receiver logs it and answers 503, so the sender retries); the other bundles are
// still marked.
//
// The tag is not trusted: the poll asks the registry, so a forged push cannot deploy anything.
func (r *Reconciler) Trigger(ctx context.Context, repository, _ string) (int, error) {
	r.once.Do(r.defaults)
	repo := receiver.NormalizeRepository(repository)
	if repo == "" {
		return 0, nil
	}
	bundles, err := r.watching(ctx, repo)
	if err != nil {
		return 0, err
	}
	at := r.Clock.Now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{werfv1.PushReceivedAnnotation: at}}})
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for i := range bundles {
		b := &bundles[i]
		if b.Spec.Suspend || !b.DeletionTimestamp.IsZero() {
			continue
		}
		err := r.Patch(ctx, b, client.RawPatch(types.MergePatchType, body), receiverFieldOwner)
		switch {
		case err == nil:
			n++
		case apierrors.IsNotFound(err):
			// Deleted since it was listed: nothing to poll for.
		default:
			errs = append(errs, fmt.Errorf("marking WerfBundle %s/%s: %w", b.Namespace, b.Name, err))
		}
	}
	return n, errors.Join(errs...)
}

// watching lists the bundles watching repo (normalised). Unsharded, this replica's cache holds
// every bundle. A shard's cache holds its own share only, so a shard also asks the API server for
// the bundles whose status.repository (a selectable field of the CRD, written by every
// reconcile) is repo, whichever shard holds them, a page at a time; its cache still counts for a
// bundle of its own whose status does not name the repository yet (before its first status write).
func (r *Reconciler) watching(ctx context.Context, repo string) ([]werfv1.WerfBundle, error) {
	var list werfv1.WerfBundleList
	if err := r.List(ctx, &list, client.MatchingFields{indexRepository: repo}); err != nil {
		return nil, fmt.Errorf("listing WerfBundles for %s: %w", repo, err)
	}
	if r.shard == nil {
		return list.Items, nil
	}
	seen := make(map[types.UID]bool, len(list.Items))
	for _, b := range list.Items {
		seen[b.UID] = true
	}
	selector := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector(repositoryField, repo)}
	next := ""
	for {
		var page werfv1.WerfBundleList
		if err := r.APIReader.List(ctx, &page, selector, client.Limit(triggerPageSize), client.Continue(next)); err != nil {
			return nil, fmt.Errorf("listing WerfBundles for %s from the API server: %w", repo, err)
		}
		for _, b := range page.Items {
			if !seen[b.UID] {
				seen[b.UID] = true
				list.Items = append(list.Items, b)
			}
		}
		if next = page.Continue; next == "" {
			return list.Items, nil
		}
	}
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
