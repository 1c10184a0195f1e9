// Package jobsecret writes the Secret a Job reads (WerfBundle deploy Jobs, Catalyst build Jobs)
// in the order that survives a crash between any two writes:
//
//  1. the Secret, named like the Job and owned by nobody yet (Ensure), so a Job never exists
//     without it;
//  2. the Job, by the caller;
//  3. the Secret owned by the Job (Own), so the garbage collector deletes the two together.
//
// After 1 alone the next reconcile finds the Secret, brings its data up to date and goes on with
// 2; after 2 it finds the Job and completes 3. Secrets left without a Job are the caller's to
// delete, since only it knows which revisions are still wanted.
package jobsecret

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ensure creates want (step 1) or, when a Secret of its name is left from an earlier attempt,
// brings that one's data up to date: the name carries the revision, not the credentials or CA in
// the data, which may have changed since. It reads the existing Secret through reader (the
// uncached API reader: a controller's own Secrets are not cached) and returns the Secret as stored.
func Ensure(ctx context.Context, c client.Client, reader client.Reader, want *corev1.Secret) (*corev1.Secret, error) {
	err := c.Create(ctx, want)
	if err == nil {
		return want, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Secret %s/%s: %w", want.Namespace, want.Name, err)
	}
	live := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", want.Namespace, want.Name, err)
	}
	if maps.EqualFunc(live.Data, want.Data, bytes.Equal) {
		return live, nil
	}
	base := live.DeepCopy()
	live.Data = want.Data
	if err := c.Patch(ctx, live, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("updating Secret %s/%s: %w", want.Namespace, want.Name, err)
	}
	return live, nil
}

// Own makes job the owner of secret (step 3), unless it is already.
func Own(ctx context.Context, c client.Client, secret *corev1.Secret, job *batchv1.Job) error {
	for _, o := range secret.OwnerReferences {
		if o.UID == job.UID {
			return nil
		}
	}
	base := secret.DeepCopy()
	secret.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
		BlockOwnerDeletion: ptr.To(false),
	}}
	if err := c.Patch(ctx, secret, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("making Job %s/%s the owner of its Secret: %w", job.Namespace, job.Name, err)
	}
	return nil
}
