package catalyst

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/operator/jobsecret"
	"github.com/slipway-dev/slipway/internal/registry"
)

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
	// Build Secrets of no live Job of this image are left from a crash or from another commit.
	secrets, err := r.listBuildSecrets(ctx, env)
	if err != nil {
		return err
	}
	// The Secret of the Job about to be made is kept: a crash may have come between the two.
	keep := map[string]bool{buildJobName(env, s.image, hash): true}
	for _, j := range jobs {
		keep[j.Name] = true
	}
	if err := r.pruneBuildSecrets(ctx, env, secrets, keep); err != nil {
		return err
	}
	if len(jobs) > 0 {
		adopted, err := r.adoptBuildSecret(ctx, jobs[0], secrets)
		if err != nil {
			return err
		}
		if !adopted {
			s.build = &outcome{reason: catalystv1alpha1.BuildingReason,
				message: fmt.Sprintf("Build Job %s/%s lost its Secret; making it again", jobs[0].Namespace, jobs[0].Name)}
			s.requeue(waitPoll)
			return errStop
		}
	}

	if len(jobs) > 0 {
		j := jobs[0]
		ref := &catalystv1alpha1.JobReference{Namespace: j.Namespace, Name: j.Name}
		s.buildJob = ref
		done, ok := joblog.Finished(j)
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
					s.image, j.Namespace, j.Name, joblog.FailureMessage(j), buildLogTail(ctx, r.APIReader, r.Logs, j))
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
		// Nothing is built: a Secret written for a build before a crash goes.
		delete(keep, buildJobName(env, s.image, hash))
		return r.pruneBuildSecrets(ctx, env, secrets, keep)
	}
	return r.createBuildJob(ctx, s, engineImage, hash)
}

// imageExists asks the registry whether the image is there. Failures are recorded in the scope;
// after a transient one the registry is not asked again before its retry time, whichever event
// brings the Environment back first.
func (r *EnvironmentReconciler) imageExists(ctx context.Context, s *envScope) (bool, error) {
	key := client.ObjectKeyFromObject(s.env)
	if msg, wait := r.failures.registryBlocked(key, s.image, s.now); wait > 0 {
		s.requeue(wait)
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.RegistryUnavailableReason,
			phase: catalystv1alpha1.PhaseBuilding, message: msg})
		return false, nil
	}
	a, err := registryAccess(ctx, r.APIReader, s.project)
	if errors.Is(err, errSecret) {
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.SecretNotFoundReason,
			phase: catalystv1alpha1.PhasePending, stalled: true, message: err.Error() + "; fix the Project's spec.registry.secretRef"})
		return false, nil
	}
	if err != nil {
		return false, err
	}
	checker, err := r.clients.Get(a.Options, r.Limiter, r.Registry)
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
	wait, msg := r.failures.registryRetry(key, s.image, err, s.now, rand.Float64(), func(wait time.Duration) string {
		return fmt.Sprintf("could not ask the registry whether %s exists: %v; retrying in %s", s.image, err, wait.Round(time.Second))
	})
	s.requeue(wait)
	s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.RegistryUnavailableReason,
		phase: catalystv1alpha1.PhaseBuilding, message: msg})
	return false, nil
}

// createBuildJob creates the build Job and its Secret (owned by the Job, so they go together):
// see startBuild.
func (r *EnvironmentReconciler) createBuildJob(ctx context.Context, s *envScope, engineImage, hash string) error {
	project := s.project
	if err := r.checkBuildNamespace(ctx, s); err != nil {
		return err
	}
	var dockerCfg []byte
	a, err := registryAccess(ctx, r.APIReader, project)
	if err != nil && !errors.Is(err, errSecret) {
		return err
	}
	if err == nil {
		if dockerCfg, err = a.DockerConfig(); err != nil {
			return err
		}
	}
	creds, err := gitCredentials(ctx, r.APIReader, project)
	if err == nil {
		return r.startBuild(ctx, s, engineImage, hash, buildSecretData(dockerCfg, creds))
	}
	if errors.Is(err, errSecret) {
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.SecretNotFoundReason,
			phase: catalystv1alpha1.PhasePending, stalled: true, message: err.Error() + "; fix the Project's spec.source.secretRef"})
		return errStop
	}
	return err
}

// startBuild writes the build's Secret, then its Job, then gives the Secret to the Job (see
// build_writes.go for why in this order).
func (r *EnvironmentReconciler) startBuild(ctx context.Context, s *envScope, engineImage, hash string, data map[string][]byte) error {
	env, project := s.env, s.project
	job, err := newBuildJob(buildRequest{
		env: env, project: project, namespace: r.BuildNamespace, image: s.image, commit: env.Spec.Source.CommitSHA,
		branch: s.branch(), engineImg: engineImage, helperImg: r.BuildHelperImage, hash: hash, gitKeys: gitSecretKeys(data),
		hasDocker: len(data[dockerConfigKey]) > 0, decorate: r.DecoratePod, resources: r.BuildResources,
		repository: project.Spec.Source.RepositoryURL,
	})
	if err != nil {
		s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.RepositoryNotFoundReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true, message: err.Error()})
		return errStop
	}
	var secret *corev1.Secret
	if len(data) > 0 {
		job.Annotations[AnnotationBuildSecret] = "true"
		if secret, err = jobsecret.Ensure(ctx, r.Client, r.APIReader, buildSecret(job, data)); err != nil {
			return err
		}
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
	s.buildJob = &catalystv1alpha1.JobReference{Namespace: job.Namespace, Name: job.Name}
	s.build = &outcome{reason: catalystv1alpha1.BuildingReason, message: fmt.Sprintf("Building %s with Job %s/%s", s.image, job.Namespace, job.Name)}
	if !job.DeletionTimestamp.IsZero() {
		// An earlier Job of this name is still going away: the Secret waits for the next one.
		s.requeue(waitPoll)
		return errStop
	}
	if secret != nil {
		if err := jobsecret.Own(ctx, r.Client, secret, job); err != nil {
			return err
		}
	}
	return errStop
}
