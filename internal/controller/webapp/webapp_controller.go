package webapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator/cachelag"
	"github.com/slipway-dev/slipway/internal/operator/patch"
)

// The WebApp role (config/rbac/webapp, docs/operator.md): the status is written with a merge
// patch; the Deployment and Service with server-side apply (patch, and create for a first
// apply); the garbage collector deletes them with their WebApp; owner references that block
// deletion need update on the WebApp's finalizers.
// +kubebuilder:rbac:groups=webapp.slipway.dev,resources=webapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=webapp.slipway.dev,resources=webapps/status,verbs=patch
// +kubebuilder:rbac:groups=webapp.slipway.dev,resources=webapps/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=core,resources=services,verbs=get;list;watch;create;patch

// Defaults for the Reconciler and its controller.
const (
	DefaultResyncPeriod = 30 * time.Second
	DefaultRetryBase    = time.Second
	DefaultRetryMax     = 5 * time.Minute
	fieldOwner          = client.FieldOwner("slipway-webapp")
)

// Reconciler reconciles WebApps into a Deployment and a Service.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder

	// ResyncPeriod is how often a WebApp is reconciled with no event (±10 %).
	ResyncPeriod time.Duration
	// ProgressDeadline is the Deployments' progressDeadlineSeconds.
	ProgressDeadline time.Duration

	// ownedReader, set on a shard (operator --shards), reads a Deployment or Service the shard's
	// cache lacks from the API server (see readOwned).
	ownedReader client.Reader

	writes cachelag.Writes
}

// NewRateLimiter is the controller's failure backoff: base, doubling per failure of the same
// WebApp, up to max.
func NewRateLimiter(base, max time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](base, max)
}

// SetupWithManager registers the controller: WebApps (spec changes and deletion), and the
// Deployments and Services they control, so a change to either is repaired at once. Without a
// RateLimiter in opts, failures back off from DefaultRetryBase to DefaultRetryMax.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if opts.RateLimiter == nil {
		opts.RateLimiter = NewRateLimiter(DefaultRetryBase, DefaultRetryMax)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("webapp").
		For(&webappv1.WebApp{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, deletionStarted))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		WithOptions(opts).
		Complete(r)
}

// deletionStarted passes the update that sets a deletionTimestamp (status updates do not pass).
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
}

// Reconcile follows one shape: read from the cache (waiting while it is older than the operator's
// own last write), snapshot for the patch, run the steps, compute the status in one place and
// write it once (nothing when nothing changed).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	app := &webappv1.WebApp{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			phases.Forget(req.NamespacedName)
			r.writes.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	s := &scope{app: app}
	if err := r.read(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if r.writes.Behind("WebApp", app) || r.writes.Behind("Deployment", s.liveDeployment) || r.writes.Behind("Service", s.liveService) {
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	helper := patch.NewHelper(app, r.Client)
	defer func() {
		r.computeStatus(s)
		if err := helper.Patch(ctx, app); err != nil && !apierrors.IsNotFound(err) {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
		r.writes.Record("WebApp", app)
		s.events.Emit(ctx, r.Recorder, s.app, "Reconcile")
		phases.Set(req.NamespacedName, app.Status.Phase)
		if retErr == nil && !s.deleting {
			result = ctrl.Result{RequeueAfter: jitter(r.resyncPeriod())}
		}
	}()

	if !app.DeletionTimestamp.IsZero() {
		// Owner references let the garbage collector delete the Deployment and the Service.
		s.deleting = true
		return ctrl.Result{}, nil
	}
	for _, step := range []func(context.Context, *scope) error{
		r.stepDeployment,
		r.stepService,
	} {
		if err := step(ctx, s); err != nil {
			if errors.Is(err, errStopped) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, err
		}
	}
	s.reconciled = true
	return ctrl.Result{}, nil
}

// read gets the Deployment and the Service named after the WebApp from the cache (left empty when
// absent).
func (r *Reconciler) read(ctx context.Context, s *scope) error {
	key := client.ObjectKeyFromObject(s.app)
	s.liveDeployment, s.liveService = &appsv1.Deployment{}, &corev1.Service{}
	if err := r.readOwned(ctx, key, s.liveDeployment); err != nil {
		return fmt.Errorf("reading Deployment %s: %w", key.Name, err)
	}
	if err := r.readOwned(ctx, key, s.liveService); err != nil {
		return fmt.Errorf("reading Service %s: %w", key.Name, err)
	}
	return nil
}

func (r *Reconciler) resyncPeriod() time.Duration {
	if r.ResyncPeriod > 0 {
		return r.ResyncPeriod
	}
	return DefaultResyncPeriod
}

func (r *Reconciler) progressDeadlineSeconds() int32 {
	if r.ProgressDeadline > 0 {
		return int32(r.ProgressDeadline / time.Second)
	}
	return DefaultProgressDeadline
}
