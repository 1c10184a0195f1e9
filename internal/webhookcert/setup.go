package webhookcert

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Setup adds the certificate management to mgr: a small cache of the Secret and the two
// configurations (every replica), the issuer (leader only), the trust reader (every replica, when
// the manager's webhook server is a *Server: it then presents only certificates the
// configurations trust) and, with Mirror, the mirror (every replica). It adds the manager's
// webhook server to the manager, as registering a webhook does.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return fmt.Errorf("webhook certificate options: %w", err)
	}
	c, err := newCache(mgr, opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(cacheRunnable{c}); err != nil {
		return err
	}
	key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: opts.Namespace, Name: opts.SecretName}}

	b := watchAll(ctrl.NewControllerManagedBy(mgr).Named("webhookcert"), c, opts, key)
	is := &issuer{reader: mgr.GetAPIReader(), writer: mgr.GetClient(), opts: opts, hosts: newHosts(opts.hostNames())}
	if err := b.WithOptions(controller.Options{MaxConcurrentReconciles: 1}).Complete(is); err != nil {
		return fmt.Errorf("setting up the webhook certificate issuer: %w", err)
	}
	if err := setupTrust(mgr, c, opts, key); err != nil {
		return err
	}
	if !opts.Mirror {
		return nil
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("webhookcert-mirror").
		WatchesRawSource(source.Kind(c, &corev1.Secret{}, to[*corev1.Secret](key))).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Complete(&mirror{reader: c, dir: opts.CertDir})
	if err != nil {
		return fmt.Errorf("setting up the webhook certificate mirror: %w", err)
	}
	return nil
}

// setupTrust makes the manager's webhook server, when it is a *Server, serve only certificates
// that chain to the CA bundles of the Secret and the configurations, read by a controller on every
// replica.
func setupTrust(mgr ctrl.Manager, c cache.Cache, opts Options, key reconcile.Request) error {
	srv, ok := mgr.GetWebhookServer().(*Server)
	if !ok {
		mgr.GetLogger().WithName("webhookcert").Info("Skipped checking the served certificate against the CA bundles: the webhook server is not a webhookcert.Server",
			"server", fmt.Sprintf("%T", mgr.GetWebhookServer()))
		return nil
	}
	srv.requireTrust()
	err := watchAll(ctrl.NewControllerManagedBy(mgr).Named("webhookcert-trust"), c, opts, key).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1}).
		Complete(&trustReader{reader: c, opts: opts, srv: srv})
	if err != nil {
		return fmt.Errorf("setting up the webhook certificate trust reader: %w", err)
	}
	return nil
}

// watchAll maps every change of the Secret and the configurations to key, and adds key once at
// the start, for a first reconcile even when none of them exists yet.
func watchAll(b *builder.Builder, c cache.Cache, opts Options, key reconcile.Request) *builder.Builder {
	b = b.WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(key)
		return nil
	})).
		WatchesRawSource(source.Kind(c, &corev1.Secret{}, to[*corev1.Secret](key)))
	if opts.MutatingWebhookConfiguration != "" {
		b = b.WatchesRawSource(source.Kind(c, &admissionregistrationv1.MutatingWebhookConfiguration{},
			to[*admissionregistrationv1.MutatingWebhookConfiguration](key)))
	}
	if opts.ValidatingWebhookConfiguration != "" {
		b = b.WatchesRawSource(source.Kind(c, &admissionregistrationv1.ValidatingWebhookConfiguration{},
			to[*admissionregistrationv1.ValidatingWebhookConfiguration](key)))
	}
	return b
}

// newCache watches only the Secret and the named configurations (field selectors on the name, so
// RBAC resourceNames covers list and watch), without managed fields.
func newCache(mgr ctrl.Manager, opts Options) (cache.Cache, error) {
	byName := func(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }
	byObject := map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{opts.Namespace: {}}, Field: byName(opts.SecretName)},
	}
	if n := opts.MutatingWebhookConfiguration; n != "" {
		byObject[&admissionregistrationv1.MutatingWebhookConfiguration{}] = cache.ByObject{Field: byName(n)}
	}
	if n := opts.ValidatingWebhookConfiguration; n != "" {
		byObject[&admissionregistrationv1.ValidatingWebhookConfiguration{}] = cache.ByObject{Field: byName(n)}
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:                  mgr.GetHTTPClient(),
		Scheme:                      mgr.GetScheme(),
		Mapper:                      mgr.GetRESTMapper(),
		ByObject:                    byObject,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the webhook certificate cache: %w", err)
	}
	return c, nil
}

// cacheRunnable makes the manager start the cache with its own caches, on every replica.
type cacheRunnable struct{ cache.Cache }

func (c cacheRunnable) GetCache() cache.Cache { return c.Cache }

// to maps every event to the one Secret key.
func to[T client.Object](key reconcile.Request) handler.TypedEventHandler[T, reconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, T) []reconcile.Request {
		return []reconcile.Request{key}
	})
}
