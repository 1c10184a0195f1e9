package catalyst

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/operator/cachelag"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/operator/patch"
	"github.com/slipway-dev/slipway/internal/registry"
)

// Defaults for the EnvironmentReconciler and the flags.
const (
	DefaultIngressNamespace   = "ingress-nginx"
	DefaultPodSecurityLevel   = "restricted"
	DefaultConcurrency        = 10
	DefaultGitTimeout         = 2 * time.Minute
	DefaultValidationInterval = 5 * time.Minute
	DefaultRegistryInFlight   = 10
	DefaultResyncPeriod       = 10 * time.Minute

	indexProject = "catalyst.catalyst.dev/project"

	// readinessPoll is how often a deploying environment looks at its objects besides the
	// Deployment events it is sent.
	readinessPoll = 10 * time.Second
	// waitPoll is how often a short wait (a terminating namespace, a ServiceAccount still to be
	// created) is checked.
	waitPoll = 2 * time.Second
	// deletePoll is how often a deleted Environment looks whether its namespace is gone, besides
	// the namespace's delete event.
	deletePoll = 10 * time.Second
	// snapshotsKept is how many fetched commits are kept in memory for other environments at
	// the same commit (each is the commit's tree, packed, bounded by gitsource's fetch limit).
	snapshotsKept = 4
	// retryBase and retryMax bound the backoff of transient failures (registry, git).
	retryBase = 10 * time.Second
	retryMax  = 5 * time.Minute
)

// EnvironmentReconciler reconciles Environments: namespace, quota, network policy, Secrets,
// image build, deployment, Ingress, readiness, TTL and cleanup.
type EnvironmentReconciler struct {
	client.Client
	// APIReader reads what is not cached: Secrets, ServiceAccounts, pods, deployed objects
	// other than Deployments.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock

	// Deployer deploys the repository at a commit into the namespace.
	Deployer Deployer
	// DeployerClusterRole is the ClusterRole an environment's deployer is bound to when its
	// Project names none (default DefaultDeployerClusterRole).
	DeployerClusterRole string
	// DeployerNamespace is the namespace of the deployers' ServiceAccount names (default
	// DefaultDeployerNamespace): the operator impersonates them, nothing runs there.
	DeployerNamespace string
	// Logs reads a failed build's log.
	Logs LogReader
	// Registry makes registry clients; Limiter bounds registry operations in flight.
	Registry RegistryFactory
	Limiter  *registry.Limiter

	PreviewDomain    string
	IngressNamespace string
	// BuildNamespace holds the build Jobs and their Secrets.
	BuildNamespace string
	KanikoImage    string
	BuildKitImage  string
	// BuildHelperImage runs the fetch and push containers of build Jobs: the operator's image.
	BuildHelperImage string
	PodSecurityLevel string
	PublicEgress     bool
	// NamespaceAnnotations are put on every environment namespace beside the operator's own
	// (the administrator's --catalyst-namespace-annotation): e.g. the PodNodeSelector and
	// PodTolerationRestriction annotations that send all of a preview's pods to a node pool.
	NamespaceAnnotations map[string]string
	GitTimeout           time.Duration
	ResyncPeriod         time.Duration
	// CheckoutDir holds the temporary checkouts handed to the Deployer (default: the system's
	// temporary directory). It must be writable: in the operator's pod, an emptyDir.
	CheckoutDir string
	// BuildResources are the requests and limits of a build Job's container.
	BuildResources corev1.ResourceList
	// DecoratePod, when set, adjusts every build Job's pod template (tests use it to steer kwok).
	DecoratePod func(*corev1.PodTemplateSpec)

	once      sync.Once
	sources   *snapshots
	clients   clientCache
	writes    cachelag.Writes
	failures  deployFailures
	readyOnce readyTracker
}

func (r *EnvironmentReconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Registry == nil {
		r.Registry = func(o registry.Options, l *registry.Limiter) (ManifestChecker, error) {
			return registry.NewClient(o, l)
		}
	}
	if r.Limiter == nil {
		r.Limiter = registry.NewLimiter(DefaultRegistryInFlight)
	}
	if r.KanikoImage == "" {
		r.KanikoImage = DefaultKanikoImage
	}
	if r.BuildKitImage == "" {
		r.BuildKitImage = DefaultBuildKitImage
	}
	if r.BuildHelperImage == "" {
		r.BuildHelperImage = DefaultBuildHelperImage
	}
	if r.PodSecurityLevel == "" {
		r.PodSecurityLevel = DefaultPodSecurityLevel
	}
	if r.GitTimeout == 0 {
		r.GitTimeout = DefaultGitTimeout
	}
	if r.DeployerClusterRole == "" {
		r.DeployerClusterRole = DefaultDeployerClusterRole
	}
	if r.DeployerNamespace == "" {
		r.DeployerNamespace = DefaultDeployerNamespace
	}
	if r.ResyncPeriod == 0 {
		r.ResyncPeriod = DefaultResyncPeriod
	}
	if r.BuildResources == nil {
		r.BuildResources = defaultBuildResources()
	}
	if r.sources == nil {
		r.sources = newSnapshots(snapshotsKept)
	}
}

// SetupWithManager registers the controller and what it watches: Environments, their Projects
// (a change of deployment settings redeploys), build Jobs, environment namespaces and the
// objects in them, Deployments it deployed, and the Secrets Projects name (copies are kept in
// sync).
func (r *EnvironmentReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.once.Do(r.defaults)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.BuildNamespace == "" {
		return errors.New("catalyst: the build namespace is not set")
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &catalystv1alpha1.Environment{}, indexProject, environmentProjectKeys); err != nil {
		return err
	}
	if err := indexProjectSecrets(ctx, mgr); err != nil {
		return err
	}
	// Each watch passes only the changes a reconcile acts on: status churn (a quota's usage, a
	// rollout's counters) and the controller's own annotations would otherwise reconcile every
	// environment many times over.
	owned := func(changed func(old, new client.Object) bool) builder.Predicates {
		return builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return isOwned(e.Object) },
			DeleteFunc:  func(e event.DeleteEvent) bool { return isOwned(e.Object) },
			GenericFunc: func(e event.GenericEvent) bool { return isOwned(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return isOwned(e.ObjectNew) && (e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
					!maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) || changed(e.ObjectOld, e.ObjectNew))
			},
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("catalyst-environment").
		For(&catalystv1alpha1.Environment{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionStarted))).
		Watches(&catalystv1alpha1.Project{}, handler.EnqueueRequestsFromMapFunc(r.projectToEnvironments),
			builder.WithPredicates(projectChanged)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(ownerOf), owned(func(o, n client.Object) bool { return joblog.OutcomeChanged(o, n) })).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(ownerOf), owned(never)).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(ownerOf), owned(specChanged)).
		Watches(&corev1.LimitRange{}, handler.EnqueueRequestsFromMapFunc(ownerOf), owned(specChanged)).
		Watches(&networkingv1.NetworkPolicy{}, handler.EnqueueRequestsFromMapFunc(ownerOf), owned(specChanged)).
		Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(ownerOf), owned(specChanged)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(ownerOf), owned(readinessChanged)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToEnvironments), builder.OnlyMetadata).
		WithOptions(opts).
		Complete(r)
}

func isOwned(o client.Object) bool {
	l := o.GetLabels()
	return l[LabelEnvironmentName] != "" && l[LabelEnvironmentNamespace] != ""
}

func never(_, _ client.Object) bool { return false }

// specChanged compares the spec of quotas, limit ranges, network policies and Ingresses (and an
// Ingress's annotations): what the controller keeps.
func specChanged(old, new client.Object) bool {
	switch o := old.(type) {
	case *corev1.ResourceQuota:
		n, ok := new.(*corev1.ResourceQuota)
		return !ok || !sameResources(o.Spec.Hard, n.Spec.Hard)
	case *corev1.LimitRange:
		n, ok := new.(*corev1.LimitRange)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	case *networkingv1.NetworkPolicy:
		n, ok := new.(*networkingv1.NetworkPolicy)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	case *networkingv1.Ingress:
		n, ok := new.(*networkingv1.Ingress)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec) || !maps.Equal(o.Annotations, n.Annotations)
	}
	return true
}

// readinessChanged passes a Deployment update that changes what kstatus says about it, or whether
// its pods can be created (ReplicaFailure).
func readinessChanged(old, new client.Object) bool {
	return kstatusOf(old) != kstatusOf(new) || old.GetGeneration() != new.GetGeneration() ||
		replicaFailure(old) != replicaFailure(new)
}

// replicaFailure is the message of a Deployment's ReplicaFailure condition, "" without one.
func replicaFailure(o client.Object) string {
	d, ok := o.(*appsv1.Deployment)
	if !ok {
		return ""
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}

// deletionStarted passes the update that sets a deletionTimestamp.
var deletionStarted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
}

// projectChanged passes Project changes Environments care about: a new generation (deployment
// settings), and a change of readiness (environments waiting for the Project's validation).
// Status updates that only count environments do not pass.
var projectChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldP, ok1 := e.ObjectOld.(*catalystv1alpha1.Project)
		newP, ok2 := e.ObjectNew.(*catalystv1alpha1.Project)
		if !ok1 || !ok2 {
			return true
		}
		return oldP.Generation != newP.Generation ||
			conditions.IsTrue(oldP.Status.Conditions, conditions.Ready) != conditions.IsTrue(newP.Status.Conditions, conditions.Ready)
	},
}

// environmentProjectKeys indexes an Environment by the <namespace>/<name> of its Project.
func environmentProjectKeys(o client.Object) []string {
	env, ok := o.(*catalystv1alpha1.Environment)
	if !ok {
		return nil
	}
	ns := projectNamespace(env)
	if ns == "" {
		return nil
	}
	return []string{ns + "/" + env.Spec.ProjectRef.Name}
}

// projectNamespace is the namespace of the Environment's Project (the team): projectRef.namespace,
// else the catalyst.dev/team label.
func projectNamespace(env *catalystv1alpha1.Environment) string {
	if env.Spec.ProjectRef.Namespace != "" {
		return env.Spec.ProjectRef.Namespace
	}
	return env.Labels[labelTeam]
}

func (r *EnvironmentReconciler) projectToEnvironments(ctx context.Context, o client.Object) []reconcile.Request {
	return environmentsOf(ctx, r.Client, o.GetNamespace()+"/"+o.GetName())
}

func environmentsOf(ctx context.Context, c client.Reader, projectKey string) []reconcile.Request {
	var list catalystv1alpha1.EnvironmentList
	if err := c.List(ctx, &list, client.MatchingFields{indexProject: projectKey}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Environments of a Project", "project", projectKey)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// secretToEnvironments maps a Secret in a team namespace to the Environments of the Projects
// that name it, so their copies follow it.
func (r *EnvironmentReconciler) secretToEnvironments(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, p := range projectsNamingSecret(ctx, r.Client, o) {
		out = append(out, environmentsOf(ctx, r.Client, p.Namespace+"/"+p.Name)...)
	}
	return out
}

// ownerOf maps an object made for an Environment back to it by its owner labels.
func ownerOf(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[LabelEnvironmentName] == "" || l[LabelEnvironmentNamespace] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[LabelEnvironmentNamespace], Name: l[LabelEnvironmentName]}}}
}

// Reconcile follows one shape: read from the cache (waiting while it is older than the
// controller's own last write), make sure the finalizer is there, snapshot for the patch, run the
// steps, compute the status in one place and write it once (nothing when nothing changed).
func (r *EnvironmentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	r.once.Do(r.defaults)
	start := time.Now()
	env := &catalystv1alpha1.Environment{}
	if err := r.Get(ctx, req.NamespacedName, env); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.Forget(req.NamespacedName)
			r.failures.forget(req.NamespacedName)
			r.readyOnce.forget(req.NamespacedName)
			phases.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if err := r.writes.Refresh(ctx, "Environment", r.APIReader, env); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if env.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(env, catalystv1alpha1.EnvironmentFinalizer) {
		// The finalizer goes on before anything is created, so nothing can leak.
		base := env.DeepCopy()
		controllerutil.AddFinalizer(env, catalystv1alpha1.EnvironmentFinalizer)
		if err := r.Patch(ctx, env, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	helper := patch.NewHelper(env, r.Client)
	s := newEnvScope(env, r.Clock.Now())
	defer func() {
		if retErr != nil {
			s.err = retErr
		}
		prevPhase := env.Status.Phase
		r.computeStatus(s)
		if err := helper.Patch(ctx, env); err != nil && !apierrors.IsNotFound(err) {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
		r.writes.Record("Environment", env)
		s.events.Emit(ctx, r.Recorder, s.env, "Reconcile")
		r.observe(s, prevPhase, time.Since(start))
		if retErr == nil {
			result = s.result(r.ResyncPeriod)
		}
	}()

	if !env.DeletionTimestamp.IsZero() {
		s.deleting = true
		return ctrl.Result{}, r.reconcileDelete(ctx, s)
	}
	for _, step := range []func(context.Context, *envScope) error{
		r.stepProject,
		r.stepTTL,
		r.stepNamespace,
		r.stepQuota,
		r.stepLimitRange,
		r.stepNetworkPolicy,
		r.stepSecrets,
		r.stepDeployer,
		r.stepBuild,
		r.stepDeploy,
		r.stepIngress,
		r.stepReadiness,
	} {
		if err := step(ctx, s); err != nil {
			if errors.Is(err, errStop) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, err
		}
	}
	s.reconciled = true
	return ctrl.Result{}, nil
}

// errStop ends the step list without an error: the scope already says why (a failure recorded
// for the status, or work in progress) and when to come back.
var errStop = errors.New("stopped")

// reconcileDelete uninstalls the deployment, deletes the build Jobs and the namespace, waits until
// the namespace is gone and releases the Environment. A namespace that belongs to another
// environment is never touched.
func (r *EnvironmentReconciler) reconcileDelete(ctx context.Context, s *envScope) error {
	env := s.env
	if !controllerutil.ContainsFinalizer(env, catalystv1alpha1.EnvironmentFinalizer) {
		return nil
	}
	if err := r.deleteBuildJobs(ctx, env, ""); err != nil {
		return err
	}
	// A Secret written just before a crash may have no Job to take it with it.
	secrets, err := r.listBuildSecrets(ctx, env)
	if err != nil {
		return err
	}
	if err := r.pruneBuildSecrets(ctx, env, secrets, nil); err != nil {
		return err
	}
	var waiting []string
	for _, name := range namespaceCandidates(env) {
		gone, err := r.deleteNamespace(ctx, s, name)
		if err != nil {
			return err
		}
		if !gone {
			waiting = append(waiting, name)
		}
	}
	if len(waiting) > 0 {
		s.deleteNote = fmt.Sprintf("Waiting for namespace %s to be deleted", strings.Join(waiting, ", "))
		// The namespace's delete event reconciles at once; this is the backstop.
		s.requeue(deletePoll)
		return nil
	}
	controllerutil.RemoveFinalizer(env, catalystv1alpha1.EnvironmentFinalizer)
	s.eventf(false, "Deleted", "Everything the Environment had is gone; released it")
	return nil
}

// namespaceCandidates are the namespaces an Environment may have: the one in its status and the
// one its name gives (in case the status was never written).
func namespaceCandidates(env *catalystv1alpha1.Environment) []string {
	var out []string
	if env.Status.Namespace != "" {
		out = append(out, env.Status.Namespace)
	}
	if team := projectNamespace(env); team != "" {
		if n := naming.NamespaceName(team, env.Spec.ProjectRef.Name, env.Name); n != env.Status.Namespace {
			out = append(out, n)
		}
	}
	return out
}

// deleteNamespace uninstalls the release from the namespace and deletes it, when it belongs to
// the Environment; gone reports that there is nothing (left) to wait for.
func (r *EnvironmentReconciler) deleteNamespace(ctx context.Context, s *envScope, name string) (gone bool, err error) {
	env := s.env
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	if !ownsNamespace(env, ns) {
		// Someone else's namespace: leave it alone.
		return true, nil
	}
	if ns.DeletionTimestamp.IsZero() {
		if r.Deployer != nil {
			if err := r.Deployer.Uninstall(ctx, name, r.deployer(name), releaseName(env)); err != nil {
				// Deleting the namespace removes what the uninstall left.
				s.eventf(true, "UninstallFailed", fmt.Sprintf("Uninstalling release %s from %s failed (the namespace is deleted anyway): %v", releaseName(env), name, err))
			}
		}
		if err := r.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting namespace %s: %w", name, err)
		}
		s.eventf(false, "DeletingNamespace", fmt.Sprintf("Deleting namespace %s", name))
	}
	return false, nil
}

// deleteBuildJobs deletes the Environment's build Jobs, all but those building keepImage.
func (r *EnvironmentReconciler) deleteBuildJobs(ctx context.Context, env *catalystv1alpha1.Environment, keepImage string) error {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(r.BuildNamespace), client.MatchingLabels{
		LabelComponent: ComponentBuild, LabelEnvironmentNamespace: env.Namespace, LabelEnvironmentName: env.Name,
	}); err != nil {
		return fmt.Errorf("listing build Jobs: %w", err)
	}
	for i := range list.Items {
		j := &list.Items[i]
		if keepImage != "" && j.Annotations[AnnotationImage] == keepImage {
			continue
		}
		if err := r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting build Job %s/%s: %w", j.Namespace, j.Name, err)
		}
	}
	return nil
}
