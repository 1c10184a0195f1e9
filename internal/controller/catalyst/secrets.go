package catalyst

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/registry/access"
)

// secretCopy is one Secret the environment namespace must hold: a copy of source (in the
// Project's namespace) under name, or, for the image pull Secret, a docker config made from the
// registry credentials.
type secretCopy struct {
	name   string
	source string
	field  string
	// pull: the copy is a kubernetes.io/dockerconfigjson Secret for pulling images.
	pull bool
}

// secretCopies lists the Secrets the Project asks to have in every environment namespace:
// spec.secretRefs under their own names, and the pull-only registry credentials as the image pull
// Secret. The push credentials (spec.registry.secretRef) and the wildcard certificate's key
// (spec.preview.tls.wildcardSecretRef) never enter an environment namespace: a pull request's code
// runs there. Copies of them an earlier version made are deleted as copies no longer asked for.
func secretCopies(project *catalystv1alpha1.Project) []secretCopy {
	var out []secretCopy
	seen := map[string]bool{}
	add := func(c secretCopy) {
		if !seen[c.name] {
			seen[c.name] = true
			out = append(out, c)
		}
	}
	for _, ref := range project.Spec.SecretRefs {
		add(secretCopy{name: ref.Name, source: ref.Name, field: "spec.secretRefs"})
	}
	if wantsPullSecret(project) {
		add(secretCopy{name: PullSecretName, source: project.Spec.Registry.PullSecretRef.Name, field: "spec.registry.pullSecretRef", pull: true})
	}
	return out
}

// wantsPullSecret reports whether the Project names pull-only registry credentials.
func wantsPullSecret(project *catalystv1alpha1.Project) bool {
	reg := project.Spec.Registry
	return reg != nil && reg.PullSecretRef != nil
}

// copiedNames is the value of the AnnotationCopiedSecrets annotation for the Project's copies.
func copiedNames(project *catalystv1alpha1.Project) string {
	var names []string
	for _, c := range secretCopies(project) {
		names = append(names, c.name)
	}
	return strings.Join(names, ",")
}

// desiredCopy reads the source of c and returns the Secret to hold in ns. Secret content is only
// ever copied, never logged or put into a status or an event.
func (r *EnvironmentReconciler) desiredCopy(ctx context.Context, env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project, ns string, c secretCopy) (*corev1.Secret, error) {
	src, err := access.ReadSecret(ctx, r.APIReader, project.Namespace, c.source, "the Project's "+c.field)
	if err != nil {
		return nil, err
	}
	labels := ownerLabels(env, ComponentEnvironment)
	labels[LabelCopiedSecret] = "true"
	out := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.name, Namespace: ns, Labels: labels,
			Annotations: map[string]string{AnnotationCopiedFrom: project.Namespace + "/" + c.source},
		},
		Type: src.Type,
		Data: maps.Clone(src.Data),
	}
	if c.pull && src.Type != corev1.SecretTypeDockerConfigJson {
		cfg, err := pullDockerConfig(project, src, "the Project's "+c.field)
		if err != nil {
			return nil, err
		}
		out.Type = corev1.SecretTypeDockerConfigJson
		out.Data = map[string][]byte{corev1.DockerConfigJsonKey: cfg}
	}
	return out, nil
}

// syncSecrets makes the environment namespace hold exactly the copies the Project asks for:
// creates and updates them, and deletes copies no longer asked for. It returns their names.
func (r *EnvironmentReconciler) syncSecrets(ctx context.Context, s *envScope) ([]string, error) {
	var names []string
	for _, c := range secretCopies(s.project) {
		want, err := r.desiredCopy(ctx, s.env, s.project, s.nsName, c)
		if err != nil {
			return nil, err
		}
		if err := r.ensureSecret(ctx, want); err != nil {
			return nil, err
		}
		names = append(names, c.name)
	}
	// The namespace records the copies it holds: the list below (an API request, Secrets are
	// not cached) is only needed when the set changes.
	recorded := copiedNames(s.project)
	if v, ok := s.namespace.Annotations[AnnotationCopiedSecrets]; ok && v == recorded {
		return names, nil
	}
	var live corev1.SecretList
	if err := r.APIReader.List(ctx, &live, client.InNamespace(s.nsName), client.MatchingLabels{LabelCopiedSecret: "true"}); err != nil {
		return nil, fmt.Errorf("listing copied Secrets: %w", err)
	}
	if !slices.Contains(names, PullSecretName) {
		// Before the Secret goes, so that a crash in between leaves no reference to a missing
		// Secret behind it (the next reconcile sees the same changed set and goes on).
		if err := r.removePullSecret(ctx, s.nsName); err != nil {
			return nil, err
		}
	}
	for i := range live.Items {
		sec := &live.Items[i]
		if slices.Contains(names, sec.Name) {
			continue
		}
		if err := r.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting Secret %s/%s no longer asked for: %w", sec.Namespace, sec.Name, err)
		}
		s.eventf(false, "SecretRemoved", fmt.Sprintf("Deleted the copy of Secret %s no longer named by the Project", sec.Name))
	}
	base := s.namespace.DeepCopy()
	s.namespace.Annotations = mergeMaps(s.namespace.Annotations, map[string]string{AnnotationCopiedSecrets: recorded})
	if err := r.Patch(ctx, s.namespace, client.MergeFrom(base)); err != nil {
		return nil, fmt.Errorf("recording the copied Secrets on namespace %s: %w", s.nsName, err)
	}
	return names, nil
}

// ensureSecret creates want or brings the live copy up to date (its type is immutable: a copy of
// another type is replaced).
func (r *EnvironmentReconciler) ensureSecret(ctx context.Context, want *corev1.Secret) error {
	live := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), live)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("copying Secret %s into %s: %w", want.Name, want.Namespace, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading Secret %s/%s: %w", want.Namespace, want.Name, err)
	}
	if live.Labels[LabelCopiedSecret] != "true" {
		return fmt.Errorf("%w: Secret %s/%s exists and is not a copy made by the controller; rename one of them", errSecret, live.Namespace, live.Name)
	}
	if live.Type != want.Type {
		if err := r.Delete(ctx, live, client.Preconditions{UID: &live.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
		return r.Create(ctx, want)
	}
	if sameData(live.Data, want.Data) && hasAll(live.Labels, want.Labels) && hasAll(live.Annotations, want.Annotations) {
		return nil
	}
	base := live.DeepCopy()
	live.Data = want.Data
	live.Labels = mergeMaps(live.Labels, want.Labels)
	live.Annotations = mergeMaps(live.Annotations, want.Annotations)
	if err := r.Patch(ctx, live, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating the copy of Secret %s in %s: %w", want.Name, want.Namespace, err)
	}
	return nil
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		if vb, ok := b[k]; !ok || !bytes.Equal(va, vb) {
			return false
		}
	}
	return true
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}

// ensurePullSecret adds the image pull Secret to the namespace's default ServiceAccount, so the
// deployment's pods can pull from the Project's registry. done is false while the
// ServiceAccount does not exist yet (the API server's controllers create it with the namespace).
func (r *EnvironmentReconciler) ensurePullSecret(ctx context.Context, ns string) (done bool, err error) {
	sa := &corev1.ServiceAccount{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: "default"}, sa); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading the default ServiceAccount of %s: %w", ns, err)
	}
	for _, ref := range sa.ImagePullSecrets {
		if ref.Name == PullSecretName {
			return true, nil
		}
	}
	base := sa.DeepCopy()
	sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: PullSecretName})
	if err := r.Patch(ctx, sa, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("adding the image pull Secret to the default ServiceAccount of %s: %w", ns, err)
	}
	return true, nil
}

// removePullSecret takes the image pull Secret off the namespace's default ServiceAccount: the
// Project names no pull credentials (any more), and the copy an earlier version made from the
// push credentials is about to be deleted.
func (r *EnvironmentReconciler) removePullSecret(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: "default"}, sa); err != nil {
		return client.IgnoreNotFound(err)
	}
	keep := slices.DeleteFunc(slices.Clone(sa.ImagePullSecrets), func(ref corev1.LocalObjectReference) bool { return ref.Name == PullSecretName })
	if len(keep) == len(sa.ImagePullSecrets) {
		return nil
	}
	base := sa.DeepCopy()
	sa.ImagePullSecrets = keep
	if err := r.Patch(ctx, sa, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing the image pull Secret from the default ServiceAccount of %s: %w", ns, err)
	}
	return nil
}
