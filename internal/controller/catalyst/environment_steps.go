package catalyst

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/conditions"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/registry"
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
// environment, and keeps its labels (team, project, environment, branch, pod security) and the
// raw branch annotation. A namespace labelled for anything else is never touched.
func (r *EnvironmentReconciler) stepNamespace(ctx context.Context, s *envScope) error {
	env, project := s.env, s.project
	s.nsName = naming.NamespaceName(s.team, project.Name, env.Name)
	labels := namespaceLabels(env, s.team, project.Name, s.branch(), r.PodSecurityLevel)
	annotations := naming.Annotations(s.branch())
	key := types.NamespacedName{Name: s.nsName}
	ns := &corev1.Namespace{}
	err := r.Get(ctx, key, ns)
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
	if reg := s.project.Spec.Registry; reg != nil && reg.SecretRef != nil {
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
	return nil
}

// stepBuild makes sure the image for the commit exists: known from an earlier reconcile, found in
// the registry, or built by a Job. A failed build stays failed until the commit, the
// Environment's spec or the Project's build settings change.
func (r *EnvironmentReconciler) stepBuild(ctx context.Context, s *envScope) error {
	env, project := s.env, s.project
	reg := project.Spec.Registry
	if reg == nil {
		s.build = &outcome{ok: true, reason: catalystv1alpha1.SucceededReason,
			message: "The Project has no registry: the deployment's own images are deployed as they are"}
		return nil
	}
	commit := env.Spec.Source.CommitSHA
	s.image = reg.Repository + ":" + commit
	prev := conditions.Get(env.Status.Conditions, catalystv1alpha1.BuildReadyCondition)
	if prev != nil && prev.Status == metav1.ConditionTrue && env.Status.Image == s.image &&
		(prev.Reason == catalystv1alpha1.ImageFoundReason || prev.Reason == catalystv1alpha1.ImageBuiltReason) {
		// Known to exist: no registry request.
		s.build = &outcome{ok: true, reason: prev.Reason, message: prev.Message}
		s.buildJob = env.Status.BuildJob
		return r.deleteBuildJobs(ctx, env, s.image)
	}
	engineImage := r.KanikoImage
	if project.Spec.Build.Engine == catalystv1alpha1.BuildEngineBuildKit {
		engineImage = r.BuildKitImage
	}
	hash := buildHash(project, engineImage)

	// This environment's Jobs for the image, newest first; Jobs for other images go.
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(r.BuildNamespace), client.MatchingLabels{
		LabelComponent: ComponentBuild, LabelEnvironmentNamespace: env.Namespace, LabelEnvironmentName: env.Name,
	}); err != nil {
		return fmt.Errorf("listing build Jobs: %w", err)
	}
	var jobs []*batchv1.Job
	for i := range list.Items {
		j := &list.Items[i]
		if j.Annotations[AnnotationImage] != s.image {
			if err := r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting build Job %s/%s of another commit: %w", j.Namespace, j.Name, err)
			}
			continue
		}
		if j.DeletionTimestamp.IsZero() {
			jobs = append(jobs, j)
		}
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[b].CreationTimestamp.Before(&jobs[a].CreationTimestamp) })

	if len(jobs) > 0 {
		j := jobs[0]
		ref := &catalystv1alpha1.JobReference{Namespace: j.Namespace, Name: j.Name}
		s.buildJob = ref
		done, ok := jobFinished(j)
		switch {
		case !done:
			s.build = &outcome{reason: catalystv1alpha1.BuildingReason, message: fmt.Sprintf("Building %s with Job %s/%s", s.image, j.Namespace, j.Name)}
			return errStop
		case ok:
			s.build = &outcome{ok: true, reason: catalystv1alpha1.ImageBuiltReason, message: fmt.Sprintf("Built and pushed %s with Job %s/%s", s.image, j.Namespace, j.Name)}
			buildsFinished.WithLabelValues("succeeded").Inc()
			s.eventf(false, catalystv1alpha1.ImageBuiltReason, fmt.Sprintf("Built %s with Job %s/%s", s.image, j.Namespace, j.Name))
			return nil
		case j.Labels[LabelBuildGeneration] == fmt.Sprint(env.Generation) && j.Annotations[AnnotationBuildHash] == hash:
			// Failed for this very spec: stays failed.
			msg := ""
			if prev != nil && prev.Reason == catalystv1alpha1.BuildFailedReason && env.Status.BuildJob != nil && *env.Status.BuildJob == *ref {
				msg = prev.Message
			} else {
				msg = fmt.Sprintf("build of %s failed (Job %s/%s: %s); push a fix as a new commit. Log tail:\n%s",
					s.image, j.Namespace, j.Name, jobFailureMessage(j), buildLogTail(ctx, r.APIReader, r.Logs, j))
				buildsFinished.WithLabelValues("failed").Inc()
				s.eventf(true, catalystv1alpha1.BuildFailedReason, fmt.Sprintf("Build of %s failed (Job %s/%s)", s.image, j.Namespace, j.Name))
			}
			s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.BuildFailedReason,
				phase: catalystv1alpha1.PhaseFailed, stalled: true, message: msg})
			return errStop
		}
		// Failed for an earlier spec or other build settings: build again.
	} else if prev != nil && prev.Reason == catalystv1alpha1.BuildFailedReason && env.Status.Image == s.image &&
		prev.ObservedGeneration == env.Generation {
		// The failed Job is gone (its TTL passed); the failure stands until something changes.
		s.buildJob = env.Status.BuildJob
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.BuildFailedReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true, message: prev.Message})
		return errStop
	}

	exists, err := r.imageExists(ctx, s)
	if err != nil {
		return err
	}
	if s.failure != nil {
		return errStop
	}
	if exists {
		s.build = &outcome{ok: true, reason: catalystv1alpha1.ImageFoundReason, message: fmt.Sprintf("Image %s is in the registry", s.image)}
		return nil
	}
	return r.createBuildJob(ctx, s, engineImage, hash)
}

// imageExists asks the registry whether the image is there. Failures are recorded in the scope.
func (r *EnvironmentReconciler) imageExists(ctx context.Context, s *envScope) (bool, error) {
	key := client.ObjectKeyFromObject(s.env)
	opts, err := registryOptions(ctx, r.APIReader, s.project)
	if errors.Is(err, errSecret) {
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.SecretNotFoundReason,
			phase: catalystv1alpha1.PhasePending, stalled: true, message: err.Error() + "; fix the Project's spec.registry.secretRef"})
		return false, nil
	}
	if err != nil {
		return false, err
	}
	checker, err := r.clients.get(opts, r.Limiter, r.Registry)
	if err != nil {
		return false, err
	}
	exists, err := checker.ManifestExists(ctx, s.image)
	if err == nil {
		registryChecks.WithLabelValues(map[bool]string{true: "found", false: "missing"}[exists]).Inc()
		r.failures.forgetRegistry(key)
		return exists, nil
	}
	registryChecks.WithLabelValues("error").Inc()
	if registry.IsAuth(err) {
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.AuthenticationFailedReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true,
			message: fmt.Sprintf("the registry refused the credentials asking for %s: %v; fix the Secret named by the Project's spec.registry.secretRef", s.image, err)})
		return false, nil
	}
	wait := r.failures.registryRetry(key)
	if ra, ok := registry.RetryAfter(err); ok && ra > wait {
		wait = min(ra, retryMax)
	}
	s.requeue(jitter(wait))
	s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.RegistryUnavailableReason,
		phase:   catalystv1alpha1.PhaseBuilding,
		message: fmt.Sprintf("could not ask the registry whether %s exists: %v; retrying in %s", s.image, err, wait.Round(time.Second))})
	return false, nil
}

// createBuildJob creates the build Job and its Secret (owned by the Job, so they go together).
func (r *EnvironmentReconciler) createBuildJob(ctx context.Context, s *envScope, engineImage, hash string) error {
	project := s.project
	var dockerCfg []byte
	opts, err := registryOptions(ctx, r.APIReader, project)
	if err != nil && !errors.Is(err, errSecret) {
		return err
	}
	if err == nil && !opts.Credentials.IsAnonymous() {
		if dockerCfg, err = dockerConfigJSON(registryHost(project.Spec.Registry.Repository), opts.Credentials); err != nil {
			return err
		}
	}
	creds, err := gitCredentials(ctx, r.APIReader, project)
	if err == nil {
		var data map[string][]byte
		data, err = buildSecretData(project.Spec.Build.Engine, dockerCfg, creds)
		if err == nil {
			return r.startBuild(ctx, s, engineImage, hash, data)
		}
	}
	if errors.Is(err, errSecret) {
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.SecretNotFoundReason,
			phase: catalystv1alpha1.PhasePending, stalled: true, message: err.Error() + "; fix the Project's spec.source.secretRef"})
		return errStop
	}
	return err
}

func (r *EnvironmentReconciler) startBuild(ctx context.Context, s *envScope, engineImage, hash string, data map[string][]byte) error {
	env, project := s.env, s.project
	job, err := newBuildJob(buildRequest{
		env: env, project: project, namespace: r.BuildNamespace, image: s.image, commit: env.Spec.Source.CommitSHA,
		branch: s.branch(), engineImg: engineImage, hash: hash, hasGit: len(data[gitUsernameKey])+len(data[gitAuthHeaderKey]) > 0,
		hasDocker: len(data[dockerConfigKey]) > 0, decorate: r.DecoratePod, resources: r.BuildResources,
		repository: project.Spec.Source.RepositoryURL,
	})
	if err != nil {
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.RepositoryNotFoundReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true, message: err.Error()})
		return errStop
	}
	if err := r.Create(ctx, job); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating build Job %s/%s: %w", job.Namespace, job.Name, err)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
	} else {
		buildsCreated.WithLabelValues(string(project.Spec.Build.Engine)).Inc()
		s.eventf(false, "BuildStarted", fmt.Sprintf("Created build Job %s/%s for %s", job.Namespace, job.Name, s.image))
	}
	if len(data) > 0 {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: job.Name, Namespace: job.Namespace, Labels: maps.Clone(job.Labels),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, BlockOwnerDeletion: ptr.To(false)}},
			},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		if err := r.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the Secret of build Job %s/%s: %w", job.Namespace, job.Name, err)
		}
	}
	s.buildJob = &catalystv1alpha1.JobReference{Namespace: job.Namespace, Name: job.Name}
	s.build = &outcome{reason: catalystv1alpha1.BuildingReason, message: fmt.Sprintf("Building %s with Job %s/%s", s.image, job.Namespace, job.Name)}
	return errStop
}

// stepDeploy deploys the repository at the commit when the revision (commit, image, the
// Project's deployment settings, host, variables) is not the one deployed. Otherwise it reads
// the inventory of the last deploy for the readiness check.
func (r *EnvironmentReconciler) stepDeploy(ctx context.Context, s *envScope) error {
	env, project := s.env, s.project
	domain := project.Spec.Preview.Domain
	if domain == "" {
		domain = r.PreviewDomain
	}
	if domain != "" {
		host, err := naming.IngressHost(env.Name, domain)
		if err != nil {
			s.fail(&failure{condition: catalystv1alpha1.DeploymentReadyCondition, reason: catalystv1alpha1.DeploymentFailedReason,
				phase: catalystv1alpha1.PhaseFailed, stalled: true, message: err.Error() + "; fix the Project's spec.preview.domain"})
			return errStop
		}
		s.host = host
	}
	s.revision = deployRevision(env, project, s.nsName, s.image, s.host)
	if env.Status.DeployedRevision == s.revision && s.namespace.Annotations[AnnotationInventoryRevision] == s.revision {
		inv, err := decodeInventory(s.namespace.Annotations[AnnotationInventory])
		if err == nil {
			s.deployed, s.inventory = true, inv
			return nil
		}
		// A damaged inventory: deploy again, which rewrites it.
	}
	key := client.ObjectKeyFromObject(env)
	if f, wait := r.failures.deployBlocked(key, s.revision, s.now); f != nil {
		s.fail(f)
		if wait > 0 {
			s.requeue(wait)
		}
		return errStop
	}
	if r.Deployer == nil {
		return errors.New("no deployer configured")
	}
	start := time.Now()
	inv, f, err := r.deploy(ctx, s)
	deployDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		deploys.WithLabelValues("error").Inc()
		return err
	}
	if f != nil {
		deploys.WithLabelValues("failed").Inc()
		f.condition = catalystv1alpha1.DeploymentReadyCondition
		if wait := r.failures.deployFailed(key, s.revision, f, s.now); wait > 0 {
			s.requeue(wait)
		}
		s.fail(f)
		s.eventf(true, f.reason, fmt.Sprintf("Deploy of commit %s failed", shortSHA(env.Spec.Source.CommitSHA)))
		return errStop
	}
	deploys.WithLabelValues("succeeded").Inc()
	r.failures.forget(key)
	value, err := encodeInventory(inv)
	if err != nil {
		return err
	}
	base := s.namespace.DeepCopy()
	s.namespace.Annotations = mergeMaps(s.namespace.Annotations, map[string]string{AnnotationInventory: value, AnnotationInventoryRevision: s.revision})
	if err := r.Patch(ctx, s.namespace, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("recording the deployed objects on namespace %s: %w", s.nsName, err)
	}
	s.deployed, s.inventory, s.freshDeploy = true, inv, true
	s.eventf(false, "Deployed", fmt.Sprintf("Deployed commit %s (revision %s, %d objects)", shortSHA(env.Spec.Source.CommitSHA), s.revision, len(inv)))
	return nil
}

// deploy fetches the repository at the commit into a temporary directory and hands it to the
// Deployer. Failures a reconcile can report are returned as a failure; the error is for the
// unexpected.
func (r *EnvironmentReconciler) deploy(ctx context.Context, s *envScope) ([]inventoryEntry, *failure, error) {
	env, project := s.env, s.project
	sourceFailure := func(err error) *failure {
		reason, stalled := sourceReason(err)
		phase := catalystv1alpha1.PhaseDeploying
		if stalled {
			phase = catalystv1alpha1.PhaseFailed
		}
		return &failure{reason: reason, phase: phase, stalled: stalled, message: err.Error() + sourceHint(reason)}
	}
	creds, err := gitCredentials(ctx, r.APIReader, project)
	if err != nil {
		if errors.Is(err, errSecret) {
			return nil, sourceFailure(err), nil
		}
		return nil, nil, err
	}
	snap, cached, err := r.sources.Get(ctx, gitsource.Options{
		URL: project.Spec.Source.RepositoryURL, Branch: s.branch(), Commit: env.Spec.Source.CommitSHA,
		Credentials: creds, Timeout: r.GitTimeout,
	})
	switch {
	case err != nil:
		gitFetches.WithLabelValues("error").Inc()
		return nil, sourceFailure(err), nil
	case cached:
		gitFetches.WithLabelValues("cached").Inc()
	default:
		gitFetches.WithLabelValues("fetched").Inc()
	}
	path := project.Spec.Deployment.Path
	if project.Spec.Deployment.Type == catalystv1alpha1.DeploymentTypeManifest {
		_, err = snap.Stat(path)
	} else {
		err = snap.RequireDir(path)
	}
	if err != nil {
		return nil, sourceFailure(err), nil
	}
	dir, err := os.MkdirTemp(r.CheckoutDir, "catalyst-checkout-")
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := snap.CheckoutDir(dir); err != nil {
		return nil, sourceFailure(err), nil
	}
	values, err := projectValues(project)
	if err != nil {
		return nil, &failure{reason: catalystv1alpha1.RenderFailedReason, phase: catalystv1alpha1.PhaseFailed, stalled: true,
			message: err.Error() + "; fix the Project's spec.deployment.values"}, nil
	}
	req := deployRequest{
		Namespace: s.nsName,
		Release:   releaseName(env),
		Type:      project.Spec.Deployment.Type,
		Source:    dir,
		Path:      path,
		Values:    values,
		Host:      s.host,
		Env:       envVars(env),
		Labels:    ownerLabels(env, ComponentEnvironment),
		Reserved:  reservedObjects(project),
	}
	if reg := project.Spec.Registry; reg != nil {
		req.Image = deployImage{Repository: reg.Repository, Tag: env.Spec.Source.CommitSHA}
	}
	res, err := r.Deployer.Deploy(ctx, req)
	if err != nil {
		return nil, deployFailure(err), nil
	}
	return inventoryOf(res), nil, nil
}

// projectValues decodes the Project's Helm values.
func projectValues(project *catalystv1alpha1.Project) (map[string]any, error) {
	v := project.Spec.Deployment.Values
	if v == nil || len(v.Raw) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(v.Raw, &out); err != nil {
		return nil, fmt.Errorf("spec.deployment.values is not an object: %w", err)
	}
	return out, nil
}

func envVars(env *catalystv1alpha1.Environment) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env.Spec.Config.EnvVars))
	for _, e := range env.Spec.Config.EnvVars {
		out = append(out, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	return out
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// stepIngress routes <environment>.<domain> to the Project's Service; without a domain there is
// no Ingress.
func (r *EnvironmentReconciler) stepIngress(ctx context.Context, s *envScope) error {
	live := &networkingv1.Ingress{}
	key := types.NamespacedName{Namespace: s.nsName, Name: IngressName}
	err := r.Get(ctx, key, live)
	if s.host == "" {
		if err == nil && live.Labels[LabelEnvironmentName] != "" {
			if err := r.Delete(ctx, live); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting Ingress %s/%s: %w", s.nsName, IngressName, err)
			}
		}
		return client.IgnoreNotFound(err)
	}
	want := desiredIngress(s.env, s.project, s.nsName, s.host)
	if apierrors.IsNotFound(err) {
		if err = r.Create(ctx, want); err == nil {
			s.ingress = true
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Ingress %s/%s: %w", s.nsName, IngressName, err)
		}
		err = r.APIReader.Get(ctx, key, live)
	}
	if err != nil {
		return fmt.Errorf("reading Ingress %s/%s: %w", s.nsName, IngressName, err)
	}
	s.ingress = true
	if sameIngress(live, want) {
		return nil
	}
	base := live.DeepCopy()
	live.Labels = mergeMaps(live.Labels, want.Labels)
	live.Annotations = mergeMaps(live.Annotations, want.Annotations)
	if want.Annotations[AnnotationClusterIssuer] == "" {
		delete(live.Annotations, AnnotationClusterIssuer)
	}
	live.Spec = want.Spec
	return wrapf(r.Patch(ctx, live, client.MergeFrom(base)), "updating Ingress %s/%s", s.nsName, IngressName)
}

// stepReadiness asks kstatus about the deployed objects; a deleted one is deployed again.
func (r *EnvironmentReconciler) stepReadiness(ctx context.Context, s *envScope) error {
	// Right after a deploy the cache may still hold the previous version of a Deployment, which
	// kstatus would call Current: read from the API server then.
	out, missing, err := r.readiness(ctx, s.inventory, s.freshDeploy)
	if err != nil {
		return err
	}
	s.ready = out
	switch {
	case missing:
		s.deployed = false
		s.requeue(time.Second)
	case out.ok:
	case out.reason == catalystv1alpha1.DeploymentFailedReason:
		s.fail(&failure{condition: catalystv1alpha1.DeploymentReadyCondition, reason: out.reason, message: out.message,
			phase: catalystv1alpha1.PhaseFailed, stalled: true})
		// It may still recover (a quota freed, a node added): look again now and then.
		s.requeue(time.Minute)
	default:
		s.requeue(readinessPoll)
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
