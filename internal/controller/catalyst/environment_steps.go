package catalyst

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

const labelTeam = naming.LabelTeam

// lookupProject reads the Environment's Project from the cache once per reconcile; nil when the
// Environment names no team or the Project does not exist.
func (r *EnvironmentReconciler) lookupProject(ctx context.Context, s *envScope) (*catalystv1alpha1.Project, error) {
	if s.projectRead {
		return s.project, nil
	}
	s.team = projectNamespace(s.env)
	if s.team == "" {
		s.projectRead = true
		return nil, nil
	}
	p := &catalystv1alpha1.Project{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.team, Name: s.env.Spec.ProjectRef.Name}, p); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading Project %s/%s: %w", s.team, s.env.Spec.ProjectRef.Name, err)
		}
		p = nil
	}
	s.project, s.projectRead = p, true
	return p, nil
}

// stepTTL computes when the environment expires (its own ttl, else the Project's defaultTTL for
// development environments, counted from its creation or its last spec change) and deletes it
// once that time has passed. It runs first: an environment whose Project is gone still expires.
func (r *EnvironmentReconciler) stepTTL(ctx context.Context, s *envScope) error {
	env := s.env
	project, err := r.lookupProject(ctx, s)
	if err != nil {
		return err
	}
	s.ttlKnown = true
	ttl := effectiveTTL(env, project)
	if ttl <= 0 {
		return nil
	}
	base, annotation, change := ttlBase(env, s.now)
	if change {
		if env.Annotations == nil {
			env.Annotations = map[string]string{}
		}
		env.Annotations[AnnotationSpecSince] = annotation
	}
	exp := base.Add(ttl).UTC().Truncate(time.Second)
	s.expiresAt = &exp
	if s.now.Before(exp) {
		return nil
	}
	if err := r.Delete(ctx, env, client.Preconditions{UID: &env.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the expired Environment: %w", err)
	}
	expired.Inc()
	s.expired = true
	s.eventf(false, catalystv1alpha1.ExpiredReason, fmt.Sprintf("Deleting the Environment: its TTL of %s expired at %s", ttl, exp.Format(time.RFC3339)))
	return errStop
}

// stepProject resolves spec.projectRef under the same-namespace rule: an Environment of Project
// <team>/<project> must live in the namespace <team>-<project>, so a team can only deploy (and
// read the Secrets of) its own Projects. A Project that is not Ready holds back environments
// that were never deployed; deployed ones keep running.
func (r *EnvironmentReconciler) stepProject(ctx context.Context, s *envScope) error {
	env := s.env
	ref := env.Spec.ProjectRef
	project, err := r.lookupProject(ctx, s)
	if err != nil {
		return err
	}
	if s.team == "" {
		s.fail(&failure{reason: catalystv1alpha1.ProjectNotFoundReason, phase: catalystv1alpha1.PhasePending, stalled: true,
			message: fmt.Sprintf("Project %q: the Environment names no team; set spec.projectRef.namespace or the %s label", ref.Name, labelTeam)})
		return errStop
	}
	if want := naming.ProjectNamespaceName(s.team, ref.Name); env.Namespace != want {
		s.fail(&failure{reason: catalystv1alpha1.ProjectRefForbiddenReason, phase: catalystv1alpha1.PhaseFailed, stalled: true,
			message: fmt.Sprintf("Environments of Project %s/%s must live in namespace %s, not %s; create the Environment there", s.team, ref.Name, want, env.Namespace)})
		return errStop
	}
	if project == nil {
		s.fail(&failure{reason: catalystv1alpha1.ProjectNotFoundReason, phase: catalystv1alpha1.PhasePending, stalled: true,
			message: fmt.Sprintf("Project %s/%s does not exist; create it or fix spec.projectRef", s.team, ref.Name)})
		return errStop
	}
	if env.Status.DeployedRevision == "" && !conditions.IsTrue(project.Status.Conditions, conditions.Ready) {
		msg := fmt.Sprintf("Project %s/%s is not Ready", s.team, ref.Name)
		if c := conditions.Get(project.Status.Conditions, conditions.Ready); c != nil && c.Message != "" {
			msg += ": " + c.Message
		} else {
			msg += " yet: it is being validated"
		}
		s.fail(&failure{reason: catalystv1alpha1.ProjectNotReadyReason, phase: catalystv1alpha1.PhasePending, message: msg})
		return errStop
	}
	return nil
}

// ownsNamespace reports whether ns is labelled for env (see naming.MatchesEnvironment).
func ownsNamespace(env *catalystv1alpha1.Environment, ns *corev1.Namespace) bool {
	return naming.MatchesEnvironment(ns.Labels, projectNamespace(env), env.Spec.ProjectRef.Name, env.Name)
}

func (s *envScope) branch() string {
	if b := s.env.Spec.Source.Branch; b != "" {
		return b
	}
	return s.project.Spec.Source.Branch
}

// stepNamespace creates the environment namespace, or adopts the one labelled for this
// environment, and keeps its labels (team, project, environment, branch, pod security), the raw
// branch annotation and the admission parameters (policyParams), which the create itself writes:
// no write in the namespace ever meets it without them. A namespace labelled for anything else
// is never touched.
func (r *EnvironmentReconciler) stepNamespace(ctx context.Context, s *envScope) error {
	env, project := s.env, s.project
	s.nsName = naming.NamespaceName(s.team, project.Name, env.Name)
	labels := namespaceLabels(env, s.team, project.Name, s.branch(), r.PodSecurityLevel)
	annotations, err := r.namespaceAnnotations(ctx, s)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Name: s.nsName}
	ns := &corev1.Namespace{}
	err = r.Get(ctx, key, ns)
	if apierrors.IsNotFound(err) {
		// A new namespace holds no copies yet: recording the ones about to be made saves
		// looking for stale ones.
		created := mergeMaps(maps.Clone(annotations), map[string]string{AnnotationCopiedSecrets: copiedNames(project)})
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.nsName, Labels: labels, Annotations: created}}
		err = r.Create(ctx, ns)
		if err == nil {
			s.namespace = ns
			s.eventf(false, "NamespaceCreated", fmt.Sprintf("Created namespace %s", s.nsName))
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", s.nsName, err)
		}
		// The cache has not seen it yet.
		err = r.APIReader.Get(ctx, key, ns)
	}
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", s.nsName, err)
	}
	if !ownsNamespace(env, ns) {
		s.fail(&failure{condition: catalystv1alpha1.NamespaceReadyCondition, reason: catalystv1alpha1.NamespaceConflictReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true,
			message: fmt.Sprintf("namespace %s exists and is not labelled for this environment (%s=%q, %s=%q, %s=%q); rename the Environment or remove the namespace",
				s.nsName, naming.LabelTeam, ns.Labels[naming.LabelTeam], naming.LabelProject, ns.Labels[naming.LabelProject],
				naming.LabelEnvironment, ns.Labels[naming.LabelEnvironment])})
		return errStop
	}
	if !ns.DeletionTimestamp.IsZero() {
		s.fail(&failure{condition: catalystv1alpha1.NamespaceReadyCondition, reason: catalystv1alpha1.NamespaceTerminatingReason,
			phase:   catalystv1alpha1.PhasePending,
			message: fmt.Sprintf("namespace %s is still being deleted from an earlier environment of this name; it is recreated once gone", s.nsName)})
		s.requeue(waitPoll)
		return errStop
	}
	if !hasAll(ns.Labels, labels) || !hasAll(ns.Annotations, annotations) || staleBranch(ns, s.branch()) {
		base := ns.DeepCopy()
		ns.Labels = mergeMaps(ns.Labels, labels)
		ns.Annotations = mergeMaps(ns.Annotations, annotations)
		if err := r.Patch(ctx, ns, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("labelling namespace %s: %w", s.nsName, err)
		}
	}
	s.namespace = ns
	return nil
}

// namespaceAnnotations are the annotations the environment namespace must carry: the
// administrator's (NamespaceAnnotations), the raw branch and the admission parameters. A Project domain that gives no valid host leaves the host empty,
// which admits no Ingress; the deploy step reports the domain.
func (r *EnvironmentReconciler) namespaceAnnotations(ctx context.Context, s *envScope) (map[string]string, error) {
	host, err := r.environmentHost(s.env, s.project)
	if err != nil {
		host = ""
	}
	storage, err := r.defaultStorageClass(ctx)
	if err != nil {
		return nil, err
	}
	annotations := mergeMaps(maps.Clone(r.NamespaceAnnotations), naming.Annotations(s.branch()))
	return mergeMaps(annotations, policyParams(s.project, host, storage)), nil
}

// staleBranch reports a branch annotation left from another branch (labels are overwritten).
func staleBranch(ns *corev1.Namespace, branch string) bool {
	v, ok := ns.Annotations[naming.AnnotationBranch]
	return ok && v != branch
}

// stepQuota keeps the namespace's ResourceQuota at the environment's quota, else the Project's
// default; without either there is none.
func (r *EnvironmentReconciler) stepQuota(ctx context.Context, s *envScope) error {
	want := desiredQuota(s.env, s.project, s.nsName)
	live := &corev1.ResourceQuota{}
	key := types.NamespacedName{Namespace: s.nsName, Name: QuotaName}
	err := r.Get(ctx, key, live)
	if want == nil {
		if err == nil && live.Labels[LabelEnvironmentName] != "" {
			if err := r.Delete(ctx, live); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting ResourceQuota %s/%s: %w", s.nsName, QuotaName, err)
			}
		}
		return client.IgnoreNotFound(err)
	}
	if apierrors.IsNotFound(err) {
		if err = r.Create(ctx, want); err == nil || !apierrors.IsAlreadyExists(err) {
			return wrapf(err, "creating ResourceQuota %s/%s", s.nsName, QuotaName)
		}
		err = r.APIReader.Get(ctx, key, live)
	}
	if err != nil {
		return fmt.Errorf("reading ResourceQuota %s/%s: %w", s.nsName, QuotaName, err)
	}
	if sameResources(live.Spec.Hard, want.Spec.Hard) && hasAll(live.Labels, want.Labels) {
		return nil
	}
	base := live.DeepCopy()
	live.Labels = mergeMaps(live.Labels, want.Labels)
	live.Spec.Hard = want.Spec.Hard
	return wrapf(r.Patch(ctx, live, client.MergeFrom(base)), "updating ResourceQuota %s/%s", s.nsName, QuotaName)
}

// stepNetworkPolicy keeps the namespace's default NetworkPolicy (see desiredNetworkPolicy).
func (r *EnvironmentReconciler) stepNetworkPolicy(ctx context.Context, s *envScope) error {
	want := desiredNetworkPolicy(s.env, s.nsName, r.IngressNamespace, r.PublicEgress)
	live := &networkingv1.NetworkPolicy{}
	key := client.ObjectKeyFromObject(want)
	err := r.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		if err = r.Create(ctx, want); err == nil || !apierrors.IsAlreadyExists(err) {
			return wrapf(err, "creating NetworkPolicy %s/%s", s.nsName, NetworkPolicyName)
		}
		err = r.APIReader.Get(ctx, key, live)
	}
	if err != nil {
		return fmt.Errorf("reading NetworkPolicy %s/%s: %w", s.nsName, NetworkPolicyName, err)
	}
	if equality.Semantic.DeepEqual(live.Spec, want.Spec) && hasAll(live.Labels, want.Labels) {
		return nil
	}
	base := live.DeepCopy()
	live.Labels = mergeMaps(live.Labels, want.Labels)
	live.Spec = want.Spec
	return wrapf(r.Patch(ctx, live, client.MergeFrom(base)), "updating NetworkPolicy %s/%s", s.nsName, NetworkPolicyName)
}

// stepSecrets copies the Secrets the Project names into the namespace and gives the default
// ServiceAccount the image pull Secret.
func (r *EnvironmentReconciler) stepSecrets(ctx context.Context, s *envScope) error {
	names, err := r.syncSecrets(ctx, s)
	if errors.Is(err, errSecret) {
		s.fail(&failure{condition: catalystv1alpha1.NamespaceReadyCondition, reason: catalystv1alpha1.SecretNotFoundReason,
			phase: catalystv1alpha1.PhasePending, stalled: true, message: err.Error() + "; create it in the Project's namespace or fix the reference"})
		return errStop
	}
	if err != nil {
		return err
	}
	if wantsPullSecret(s.project) {
		done, err := r.ensurePullSecret(ctx, s.nsName)
		if err != nil {
			return err
		}
		if !done {
			s.nsMessage = fmt.Sprintf("Waiting for the default ServiceAccount of namespace %s, to give it the image pull Secret", s.nsName)
			s.requeue(waitPoll)
			return errStop
		}
	}
	s.nsReady = true
	s.nsMessage = fmt.Sprintf("Namespace %s is ready with its quota, network policy and %d copied Secret(s)", s.nsName, len(names))
	if s.limits != "" {
		s.nsMessage += "; " + s.limits
	}
	return nil
}

// wrapf wraps err with a message, nil for nil.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
