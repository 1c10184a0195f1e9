package catalyst

import (
	"context"
	"fmt"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/operator/jobsecret"
)

// A build writes two objects, in this order, so that a crash (or a failed request) after any one
// write leaves a state the next reconcile completes (docs/catalyst.md, Crash safety):
//
//  1. the Job's Secret, named like the Job, owned by nobody yet: a Job never exists without it;
//  2. the Job (annotated with whether it has a Secret);
//  3. the Secret owned by the Job, so the garbage collector deletes the two together.
//
// After 1 alone the next reconcile finds no Job, brings the Secret up to date and goes on with 2.
// After 2 the next reconcile finds the Job and gives it its Secret (3). A Secret left without a
// Job, because the environment moved to another commit, found its image in the registry or was
// deleted meanwhile, is deleted by pruneBuildSecrets.

// AnnotationBuildSecret on a build Job says it reads the Secret of its own name.
const AnnotationBuildSecret = "catalyst.catalyst.dev/build-secret"

// buildSecretLabels select an Environment's build Secrets (and Jobs) in the build namespace.
func buildSecretLabels(env *catalystv1alpha1.Environment) client.MatchingLabels {
	return client.MatchingLabels{LabelComponent: ComponentBuild, LabelEnvironmentNamespace: env.Namespace, LabelEnvironmentName: env.Name}
}

// listBuildSecrets reads the Environment's build Secrets from the API server (the controller's
// own Secrets are not cached).
func (r *EnvironmentReconciler) listBuildSecrets(ctx context.Context, env *catalystv1alpha1.Environment) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(r.BuildNamespace), buildSecretLabels(env)); err != nil {
		return nil, fmt.Errorf("listing build Secrets: %w", err)
	}
	return list.Items, nil
}

// pruneBuildSecrets deletes the Environment's build Secrets but those named in keep (the Secrets
// of its live Jobs).
func (r *EnvironmentReconciler) pruneBuildSecrets(ctx context.Context, env *catalystv1alpha1.Environment, secrets []metav1.PartialObjectMetadata, keep map[string]bool) error {
	for i := range secrets {
		sec := &secrets[i]
		if keep[sec.Name] || !sec.DeletionTimestamp.IsZero() {
			continue
		}
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sec.Namespace, Name: sec.Name}}
		if err := r.Delete(ctx, obj, client.Preconditions{UID: &sec.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting build Secret %s/%s: %w", sec.Namespace, sec.Name, err)
		}
	}
	return nil
}

// buildSecret is the Job's Secret (step 1, written with jobsecret.Ensure), carrying the Job's
// labels and annotations.
func buildSecret(job *batchv1.Job, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, Labels: maps.Clone(job.Labels), Annotations: maps.Clone(job.Annotations)},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// adoptBuildSecret completes step 3 for a Job found by a later reconcile. ok is false when the
// Job reads a Secret that is gone (deleted by hand, or a Job made before the Secret by an older
// operator): the Job cannot succeed and is deleted, to be made again.
func (r *EnvironmentReconciler) adoptBuildSecret(ctx context.Context, job *batchv1.Job, secrets []metav1.PartialObjectMetadata) (ok bool, err error) {
	if job.Annotations[AnnotationBuildSecret] != "true" {
		return true, nil
	}
	for i := range secrets {
		if secrets[i].Name != job.Name {
			continue
		}
		for _, o := range secrets[i].OwnerReferences {
			if o.UID == job.UID {
				return true, nil
			}
		}
		sec := &corev1.Secret{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name}, sec); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return true, jobsecret.Own(ctx, r.Client, sec, job)
	}
	if done, _ := joblog.Finished(job); done {
		// Finished: its Secret is no longer needed.
		return true, nil
	}
	if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting build Job %s/%s, whose Secret is gone: %w", job.Namespace, job.Name, err)
	}
	return false, nil
}
