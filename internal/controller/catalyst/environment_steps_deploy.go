package catalyst

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource"
)

// stepDeploy deploys the repository at the commit when the revision (commit, image, the
// Project's deployment settings, host, variables) is not the one deployed. Otherwise it reads
// the inventory of the last deploy for the readiness check.
func (r *EnvironmentReconciler) stepDeploy(ctx context.Context, s *envScope) error {
	env, project := s.env, s.project
	host, err := r.environmentHost(env, project)
	if err != nil {
		s.fail(&failure{condition: catalystv1alpha1.DeploymentReadyCondition, reason: catalystv1alpha1.DeploymentFailedReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true, message: err.Error() + "; fix the Project's spec.preview.domain"})
		return errStop
	}
	s.host = host
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
	res, f, err := r.deploy(ctx, s)
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
		s.eventf(true, f.reason, fmt.Sprintf("Deploy of commit %s failed: %s", shortSHA(env.Spec.Source.CommitSHA), f.message))
		return errStop
	}
	deploys.WithLabelValues("succeeded").Inc()
	r.failures.forget(key)
	inv := inventoryOf(res)
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
	s.envContainers = int32(min(res.EnvContainers, math.MaxInt32))
	s.eventf(false, "Deployed", fmt.Sprintf("Deployed commit %s (revision %s, %d objects)", shortSHA(env.Spec.Source.CommitSHA), s.revision, len(inv)))
	return nil
}

// deploy fetches the repository at the commit into a temporary directory and hands it to the
// Deployer. Failures a reconcile can report are returned as a failure; the error is for the
// unexpected.
func (r *EnvironmentReconciler) deploy(ctx context.Context, s *envScope) (deployResult, *failure, error) {
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
			return deployResult{}, sourceFailure(err), nil
		}
		return deployResult{}, nil, err
	}
	snap, cached, err := r.sources.Get(ctx, gitsource.Options{
		URL: project.Spec.Source.RepositoryURL, Branch: s.branch(), Commit: env.Spec.Source.CommitSHA,
		Credentials: creds, Timeout: r.GitTimeout,
	})
	switch {
	case err != nil:
		gitFetches.WithLabelValues("error").Inc()
		return deployResult{}, sourceFailure(err), nil
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
		return deployResult{}, sourceFailure(err), nil
	}
	dir, err := os.MkdirTemp(r.CheckoutDir, "catalyst-checkout-")
	if err != nil {
		return deployResult{}, nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := snap.CheckoutDir(dir); err != nil {
		return deployResult{}, sourceFailure(err), nil
	}
	values, err := projectValues(project)
	if err != nil {
		return deployResult{}, &failure{reason: catalystv1alpha1.RenderFailedReason, phase: catalystv1alpha1.PhaseFailed, stalled: true,
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
		// Everything the repository renders and applies is done as the environment's own
		// deployer, never as the operator.
		ServiceAccount: r.deployer(s.nsName),
		Policy:         deployPolicy(project),
	}
	if reg := project.Spec.Registry; reg != nil {
		req.Image = deployImage{Repository: reg.Repository, Tag: env.Spec.Source.CommitSHA}
	}
	res, err := r.Deployer.Deploy(ctx, req)
	if err != nil {
		return deployResult{}, deployFailure(err), nil
	}
	return res, nil, nil
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
