package werfbundle

import (
	"context"
	"fmt"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/operator/jobsecret"
)

// A Job's Secret (merged values, registry config.json, CA) is named like the Job and written
// before it, without an owner; once the Job exists the Secret is made the Job's, so they go away
// together. A Job therefore never waits for a Secret that is not there, and each crash point
// leaves something the next reconcile completes:
//
//   - Secret written, no Job: the next reconcile for the same revision finds the Secret (same
//     name), brings its data up to date and creates the Job; a Secret whose revision is no longer
//     wanted is deleted by sweepJobSecrets before the bundle's next Secret is written, or when
//     the bundle is deleted.
//   - Job written, Secret not yet its own: the Job is running or finished but the bundle's status
//     does not name it as the active Job; adoptJobSecret gives the Secret its owner.

// jobSecret is the Secret for job (merged values, registry config.json, CA), written with
// jobsecret.Ensure before the Job.
func jobSecret(job *batchv1.Job, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, Labels: maps.Clone(job.Labels)},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// adoptJobSecret finishes the write order for a Job that an earlier reconcile created without
// getting to record it (the operator stopped, or the ownership write failed): the Job's Secret,
// if it has one, becomes the Job's.
func (r *Reconciler) adoptJobSecret(ctx context.Context, job *batchv1.Job) error {
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), secret); err != nil {
		// A Job without values, credentials or CA has no Secret.
		return client.IgnoreNotFound(err)
	}
	if secret.Labels[LabelBundleName] != job.Labels[LabelBundleName] ||
		secret.Labels[LabelBundleNamespace] != job.Labels[LabelBundleNamespace] {
		return nil
	}
	return jobsecret.Own(ctx, r.Client, secret, job)
}

// sweepJobSecrets deletes the Secrets of this bundle in the target namespace that have no owner
// and belong to no Job of the bundle: left by an attempt that stopped between its Secret and its
// Job, for a revision no longer wanted. keep is the Secret about to be written.
func (r *Reconciler) sweepJobSecrets(ctx context.Context, s *scope, keep string) error {
	b := s.bundle
	var list corev1.SecretList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(s.targetNS), client.MatchingLabels{
		LabelComponent: ComponentValue, LabelBundleNamespace: b.Namespace, LabelBundleName: b.Name,
	}); err != nil {
		return fmt.Errorf("listing the bundle's Job Secrets: %w", err)
	}
	jobs := map[string]bool{keep: true}
	for _, j := range s.jobs {
		jobs[j.Name] = true
	}
	for i := range list.Items {
		sec := &list.Items[i]
		if len(sec.OwnerReferences) > 0 || jobs[sec.Name] {
			continue
		}
		if err := r.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the left-over Secret %s/%s: %w", sec.Namespace, sec.Name, err)
		}
	}
	return nil
}
