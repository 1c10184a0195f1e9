package werfbundle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/operator/cachelag"
	"github.com/slipway-dev/slipway/internal/operator/patch"
	"github.com/slipway-dev/slipway/internal/registry"
)

// +kubebuilder:rbac:groups=werf.io,resources=werfbundles,verbs=get;list;watch
// The push receiver records a push on the bundle (werfv1.PushReceivedAnnotation).
// +kubebuilder:rbac:groups=werf.io,resources=werfbundles,verbs=patch
// +kubebuilder:rbac:groups=werf.io,resources=werfbundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create;get;list;watch;delete
// +kubebuilder:rbac:groups=core,resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=create;delete,namespace=slipway-system
// +kubebuilder:rbac:groups=core,resources=namespaces;serviceaccounts,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=pods,verbs=list
// +kubebuilder:rbac:groups=core,resources=pods/log,verbs=get

// Defaults for the Reconciler.
const (
	DefaultWerfImage        = "registry.werf.io/werf/werf:2-stable"
	DefaultMaxInFlight      = 10
	DefaultConcurrency      = 8
	DefaultJobDeadline      = 30 * time.Minute
	DefaultJobBackoffLimit  = 1
	DefaultJobHistory       = 3
	DefaultLogBytes         = 64 << 10
	indexValuesSource       = "werf.io/values-source"
	indexRepository         = "werf.io/repository"
	indexTargetNamespace    = "werf.io/target-namespace"
	fieldOwner              = client.FieldOwner("slipway-werfbundle")
	maxConsecutiveFailures  = 5
	prerequisiteRetryPeriod = time.Minute
)

// TagLister lists a repository's tags; *registry.Client is the production one.
type TagLister interface {
	ListTags(ctx context.Context, repository, etag string) (registry.TagList, error)
}

// RegistryFactory makes a TagLister for one bundle's registry settings.
type RegistryFactory func(opts registry.Options, limiter *registry.Limiter) (TagLister, error)

// Reconciler reconciles WerfBundles: it polls the registry, runs one converge Job at a time per
// bundle in the target namespace, records the outcome, keeps Job logs and checks for drift.
type Reconciler struct {
	client.Client
	// APIReader reads what is not cached: values sources, registry Secrets, namespaces, pods.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock

	// Registry makes registry clients; Limiter bounds registry operations in flight across bundles.
	Registry RegistryFactory
	Limiter  *registry.Limiter
	// Logs reads a finished Job's pod log.
	Logs LogReader

	// OperatorNamespace holds the Job log store.
	OperatorNamespace string
	WerfImage         string
	JobDeadline       time.Duration
	JobBackoffLimit   int32
	JobHistory        int
	LogBytes          int64
	// JobEnv is added to the environment of every Job's werf container (--werfbundle-job-env):
	// proxies for the registry, werf settings, or the API server's address where pods cannot
	// reach the kubernetes Service. It never replaces what the Job sets itself (ReservedJobEnv).
	JobEnv []corev1.EnvVar
	// AllowCrossNamespace lets every bundle deploy into any namespace and read values there, as
	// on a single-tenant cluster; otherwise another namespace must accept the bundle's namespace
	// (werfv1.AcceptBundlesFromAnnotation).
	AllowCrossNamespace bool
	// Log is the base of every reconcile's logger (default: the manager's).
	Log logr.Logger
	// DecoratePod, when set, adjusts every Job's pod template (tests use it to steer kwok).
	DecoratePod func(JobKind, *corev1.PodTemplateSpec)
	// StatusDelay, when set, defers the status write of a reconcile that created a Job by this
	// long, behind every other queued request: the Job is then the reconcile's only write, and the
	// status (and the Events) go out with the next reconcile of the bundle, coalesced with what
	// that one records (the Job's end, when it came first). Zero writes the status at once.
	// The operator runs with DefaultStatusDelay (see "Write order and crashes" in docs/werfbundle.md).
	StatusDelay time.Duration

	// shard keeps the Jobs of bundles moved to this shard in view (nil unless --shards > 1).
	shard *shardJobs

	once  sync.Once
	polls *pollTracker
	// writes knows the resourceVersion of each bundle's last status write (see cachelag).
	writes cachelag.Writes
	// pending holds the status writes deferred by StatusDelay.
	pending pendingStatuses
	clientCache
}

func (r *Reconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Registry == nil {
		r.Registry = func(o registry.Options, l *registry.Limiter) (TagLister, error) { return registry.NewClient(o, l) }
	}
	if r.Limiter == nil {
		r.Limiter = registry.NewLimiter(DefaultMaxInFlight)
	}
	if r.WerfImage == "" {
		r.WerfImage = DefaultWerfImage
	}
	if r.JobDeadline == 0 {
		r.JobDeadline = DefaultJobDeadline
	}
	if r.JobBackoffLimit == 0 {
		r.JobBackoffLimit = DefaultJobBackoffLimit
	}
	if r.JobHistory == 0 {
		r.JobHistory = DefaultJobHistory
	}
	if r.LogBytes == 0 {
		r.LogBytes = DefaultLogBytes
	}
	if r.polls == nil {
		r.polls = newPollTracker()
	}
}

// SetupWithManager registers the controller: WerfBundles, their Jobs (matched by label, as they
// may live in another namespace), the ConfigMaps and Secrets their values come from, and the
// Namespaces they deploy into (creation, and the opt-in annotation).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.once.Do(r.defaults)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &werfv1.WerfBundle{}, indexValuesSource, valuesSourceKeys); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &werfv1.WerfBundle{}, indexRepository, repositoryKeys); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &werfv1.WerfBundle{}, indexTargetNamespace, targetNamespaceKeys); err != nil {
		return err
	}
	if r.StatusDelay > 0 {
		if err := mgr.Add(statusFlusher{r: r}); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("werfbundle").
		For(&werfv1.WerfBundle{}, builder.WithPredicates(bundleChanges)).
		Watches(&batchv1.Job{}, enqueueOutcome(jobToBundle), builder.WithPredicates(managedJobs)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.valuesSourceToBundles("ConfigMap")),
			builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.valuesSourceToBundles("Secret")),
			builder.OnlyMetadata).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToBundles),
			builder.OnlyMetadata, builder.WithPredicates(namespaceChanges)).
		WithOptions(opts).
		WithLogConstructor(r.logConstructor(mgr.GetLogger())).
		Complete(r)
}

// logConstructor gives each reconcile's log lines the bundle and its namespace; the notes add the
// operation (see package notes).
func (r *Reconciler) logConstructor(base logr.Logger) func(*reconcile.Request) logr.Logger {
	if r.Log.GetSink() != nil {
		base = r.Log
	}
	base = base.WithValues("controller", "werfbundle", "controllerGroup", werfv1.GroupVersion.Group, "controllerKind", "WerfBundle")
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("bundle", req.Name, "namespace", req.Namespace)
	}
}

// bundleChanges passes a bundle's creation, deletion, spec changes and annotation changes: the
// reconcile-now request and the push receiver's werfv1.PushReceivedAnnotation, which another
// replica may have written. Status writes (the controller's own) do not pass.
var bundleChanges = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// managedJobs passes the events of slipway's Jobs that a bundle acts on: a Job that ended,
// started going away or is gone. Its creation (the controller made it, and at start every
// bundle is reconciled anyway) and its progress in between (active and ready counts) change
// nothing, and would cost a reconcile each; a Job first seen already finished (after a watch
// gap) passes.
var managedJobs = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		j, ok := e.Object.(*batchv1.Job)
		if !ok || !isManagedJob(j) {
			return false
		}
		finished, _ := joblog.Finished(j)
		return finished
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return isManagedJob(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return isManagedJob(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return isManagedJob(e.ObjectNew) && (joblog.OutcomeChanged(e.ObjectOld, e.ObjectNew) ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero())
	},
}

func isManagedJob(o client.Object) bool {
	l := o.GetLabels()
	return l[LabelComponent] == ComponentValue && l[LabelBundleName] != ""
}

func jobToBundle(_ context.Context, o client.Object) []reconcile.Request {
	if !isManagedJob(o) {
		return nil
	}
	l := o.GetLabels()
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[LabelBundleNamespace], Name: l[LabelBundleName]}}}
}

// outcomePriority queues the reconcile that records a Job's end or removal with the deferred status
// writes, behind the bundles waiting for their first Job (the initial list's at
// handler.LowPriority, new bundles' at 0): during a burst of first deploys the API server's writes go
// to Jobs first, not to the statuses, logs and Events of the Jobs already done; with nothing else
// queued it runs at once.
const outcomePriority = statusWritePriority

// enqueueOutcome enqueues the bundles mapFn names at outcomePriority (at once when the queue is not
// a priority queue).
func enqueueOutcome(mapFn handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
		for _, req := range mapFn(ctx, o) {
			if ok {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(outcomePriority)}, req)
			} else {
				q.Add(req)
			}
		}
	}
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc:  func(ctx context.Context, e event.CreateEvent, q queue) { add(ctx, e.Object, q) },
		UpdateFunc:  func(ctx context.Context, e event.UpdateEvent, q queue) { add(ctx, e.ObjectNew, q) },
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { add(ctx, e.Object, q) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { add(ctx, e.Object, q) },
	}
}

// Reconcile follows one shape: read, snapshot for the patch, run the steps, compute the status in
// one place and write it once (nothing when nothing changed). A reconcile that created a Job defers
// its write (StatusDelay); the next one writes both.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	r.once.Do(r.defaults)
	r.pending.active.Add(1)
	defer r.pending.active.Add(-1)
	start := time.Now()
	bundle := &werfv1.WerfBundle{}
	if err := r.Get(ctx, req.NamespacedName, bundle); err != nil {
		if apierrors.IsNotFound(err) {
			r.polls.forget(req.NamespacedName)
			r.writes.Forget(req.NamespacedName)
			r.pending.forget(req.NamespacedName)
			forgetMetrics(req.NamespacedName)
			return ctrl.Result{}, r.cleanupDeleted(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	// The event of the Job just created can come before the cache holds the status written with it.
	if err := r.writes.Refresh(ctx, "WerfBundle", r.APIReader, bundle); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !bundle.DeletionTimestamp.IsZero() {
		r.pending.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	helper := patch.NewHelper(bundle, r.Client)
	s := newScope(bundle, r.Clock.Now())
	// What an earlier reconcile deferred is written with this one's changes, as if written then.
	deferred := r.pending.take(req.NamespacedName)
	if deferred != nil {
		bundle.Status = deferred.status
		s.events, s.owners = deferred.notes, deferred.owners
	}
	defer func() {
		r.computeStatus(s)
		if r.deferStatus(s, retErr) {
			r.pending.put(req.NamespacedName, s.pending())
			observeReconcile(s, time.Since(start))
			result = ctrl.Result{RequeueAfter: r.StatusDelay, Priority: ptr.To(statusWritePriority)}
			return
		}
		if err := r.writeStatus(ctx, helper, s, deferred != nil); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
		observeReconcile(s, time.Since(start))
		if retErr == nil {
			result = s.result()
		}
	}()
	return ctrl.Result{}, r.runSteps(ctx, s)
}

// runSteps runs the steps in order until one stops or fails.
func (r *Reconciler) runSteps(ctx context.Context, s *scope) error {
	if s.bundle.Spec.Suspend {
		s.suspended = true
		// Resuming polls at once, not when the schedule from before the suspension says.
		r.polls.trigger(client.ObjectKeyFromObject(s.bundle))
		return nil
	}
	for _, step := range []func(context.Context, *scope) error{
		r.stepResolve,
		r.stepTenancy,
		r.stepPoll,
		r.stepJobs,
		r.stepDeploy,
		r.stepDrift,
	} {
		if err := step(ctx, s); err != nil {
			var stop *stopError
			if errors.As(err, &stop) {
				return nil
			}
			return err
		}
	}
	s.reconciled = true
	return nil
}

// deferStatus reports whether this reconcile's status write waits for the next reconcile: it
// created a Job, and wrote nothing else that the status must follow.
func (r *Reconciler) deferStatus(s *scope, err error) bool {
	return r.StatusDelay > 0 && err == nil && s.created != nil && !r.pending.stopping.Load()
}

// writeStatus writes what the reconcile (and a deferred one before it) left: the Job's ownership
// of its Secret, then the status, then the Events. A failed write keeps the deferred part for the
// next try.
func (r *Reconciler) writeStatus(ctx context.Context, helper *patch.Helper, s *scope, deferred bool) error {
	b := s.bundle
	var errs []error
	for _, j := range s.owners {
		if err := r.adoptJobSecret(ctx, j); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := helper.Patch(ctx, b); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		if deferred {
			// The next try writes it; the Job's adoption covers a process that dies first.
			r.pending.put(client.ObjectKeyFromObject(b), s.pending())
		}
		return kerrors.NewAggregate(errs)
	}
	r.writes.Record("WerfBundle", b)
	s.events.Emit(ctx, r.Recorder, b, "Reconcile")
	return nil
}

// stopError ends the step list without an error: the scope already says why (a failure recorded
// in status, or work in progress) and when to come back.
type stopError struct{ reason string }

func (e *stopError) Error() string { return "stopped: " + e.reason }

func stop(reason string) error { return &stopError{reason: reason} }

// cleanupDeleted removes what a deleted bundle left in other namespaces: Jobs (their values
// Secrets go with them by owner reference), Secrets that never got their Job, and logs. Jobs in the bundle's own namespace would be
// garbage collected too, but Jobs elsewhere cannot carry an owner reference to the bundle.
func (r *Reconciler) cleanupDeleted(ctx context.Context, key types.NamespacedName) error {
	if gone, err := r.shard.gone(ctx, key); !gone {
		return err // moved to another shard, which owns its Jobs now
	}
	sel := client.MatchingLabels{LabelComponent: ComponentValue, LabelBundleNamespace: key.Namespace, LabelBundleName: key.Name}
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, sel); err != nil {
		return err
	}
	var errs []error
	for i := range jobs.Items {
		if err := r.Delete(ctx, &jobs.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	// Secrets a stopped reconcile wrote before their Job; the others go with their Jobs.
	var secrets corev1.SecretList
	if err := r.APIReader.List(ctx, &secrets, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing Job Secrets: %w", err))
	}
	for i := range secrets.Items {
		if len(secrets.Items[i].OwnerReferences) > 0 {
			continue
		}
		if err := r.Delete(ctx, &secrets.Items[i]); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting Secret %s: %w", secrets.Items[i].Name, err))
		}
	}
	if r.OperatorNamespace != "" {
		var logs corev1.ConfigMapList
		if err := r.APIReader.List(ctx, &logs, client.InNamespace(r.OperatorNamespace), sel); err != nil {
			errs = append(errs, fmt.Errorf("listing logs: %w", err))
		}
		for i := range logs.Items {
			if err := r.Delete(ctx, &logs.Items[i]); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("deleting log %s: %w", logs.Items[i].Name, err))
			}
		}
	}
	return kerrors.NewAggregate(errs)
}
