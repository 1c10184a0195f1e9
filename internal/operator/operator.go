package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/time/rate"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/slipway-dev/slipway/internal/webhookcert"
)

// Controller is one system the operator can host.
type Controller struct {
	// Name is what --controllers accepts.
	Name string
	// BindFlags, when set, registers the system's own flags.
	BindFlags func(fs *flag.FlagSet)
	// Setup registers the system's reconcilers (and webhooks) with the manager.
	Setup func(ctx context.Context, mgr ctrl.Manager, opts Options) error
	// JobNamespaces, when set, returns (once the flags are parsed) the only namespaces the system
	// reads Jobs in; none when it reads no Job. Unset, the system may read Jobs in every
	// namespace. The manager caches Jobs in every namespace unless each selected system sets it,
	// and then in the namespaces they return alone: a system whose Jobs rule is a Role in one
	// namespace (Catalyst's build namespace) is not refused a watch of every namespace, while one
	// process running a system that needs them all (WerfBundle) still sees them all.
	JobNamespaces func() []string
	// Shard, when set, lets the system's replicas share its objects as shards (--shards > 1).
	Shard *Sharding
}

// Options are the operator's settings, bound to command-line flags by BindFlags.
type Options struct {
	Controllers   []string
	MetricsAddr   string
	SecureMetrics bool
	ProbeAddr     string
	// PprofAddr serves net/http/pprof when set (off by default): heap profiles of a running
	// operator, as the scale benchmarks take them.
	PprofAddr               string
	WebhookPort             int
	WebhookCertDir          string
	WebhookCert             WebhookCertOptions
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	GracefulShutdownTimeout time.Duration
	// Namespace is where the operator runs; used for its own objects (leases, logs).
	Namespace string
	// QPS and Burst limit the operator's requests to the API server (see ClientRateLimit: 0, the
	// default, means no limit when the API server enforces API Priority and Fairness).
	QPS   float64
	Burst int
	// EventQPS and EventBurst limit the Events the controllers record (see EventRecorder).
	EventQPS   float64
	EventBurst int
	// SkipControllerNameValidation lets a process build several managers with the same
	// controllers (tests); controller names must otherwise be unique per process.
	SkipControllerNameValidation bool
	// Shards > 1 makes every replica a shard of the selected system (see Sharding); ShardName
	// is this replica's.
	Shards    int
	ShardName string

	eventLimiter *rate.Limiter
}

// BindFlags registers the options on fs with production defaults.
func (o *Options) BindFlags(fs *flag.FlagSet, available []Controller) {
	names := controllerNames(available)
	fs.Func("controllers", fmt.Sprintf("comma-separated controllers to run, from %s (default: all)", strings.Join(names, ", ")),
		func(s string) error {
			o.Controllers = nil
			for _, n := range strings.Split(s, ",") {
				if n = strings.TrimSpace(n); n != "" {
					o.Controllers = append(o.Controllers, n)
				}
			}
			return nil
		})
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8443", "address the metrics endpoint binds to; \"0\" disables it")
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", true, "serve metrics over HTTPS with authentication and authorization by the API server")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", "address net/http/pprof binds to (profiles of the running operator); empty disables it")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "port the webhook server listens on")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "directory of the webhook serving certificate (tls.crt, tls.key); default "+webhookcert.DefaultCertDir())
	o.WebhookCert.bindFlags(fs)
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader through a Lease so only one replica reconciles")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "slipway-operator.slipway.dev", "name of the leader-election Lease")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the operator's namespace)")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a non-leader waits before taking over an expired lease")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader retries renewing before giving up")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often leader-election actions are retried")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "how long in-flight reconciles may take to finish on shutdown")
	fs.StringVar(&o.Namespace, "namespace", "slipway-system", "namespace the operator runs in")
	fs.Float64Var(&o.QPS, "kube-api-qps", 0, fmt.Sprintf("client-side limit of requests per second to the API server; 0: none when the API server enforces API Priority and Fairness, else %d; negative: none", FallbackQPS))
	fs.IntVar(&o.Burst, "kube-api-burst", FallbackBurst, "request burst to the API server, with a positive --kube-api-qps")
	bindEventFlags(fs, o)
	bindShardFlags(fs, o)
	for _, c := range available {
		if c.BindFlags != nil {
			c.BindFlags(fs)
		}
	}
}

// Select returns the controllers named in o.Controllers (all when empty), or an error naming the
// unknown ones.
func (o *Options) Select(available []Controller) ([]Controller, error) {
	if len(o.Controllers) == 0 {
		return available, nil
	}
	var selected []Controller
	var unknown []string
	for _, name := range o.Controllers {
		i := slices.IndexFunc(available, func(c Controller) bool { return c.Name == name })
		if i < 0 {
			unknown = append(unknown, name)
			continue
		}
		if !slices.ContainsFunc(selected, func(c Controller) bool { return c.Name == name }) {
			selected = append(selected, available[i])
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown controllers %q; available: %s", unknown, strings.Join(controllerNames(available), ", "))
	}
	return selected, nil
}

func controllerNames(cs []Controller) []string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// NewManager builds the manager and sets up the selected controllers on it.
func NewManager(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts Options, available []Controller) (ctrl.Manager, error) {
	selected, err := opts.Select(available)
	if err != nil {
		return nil, err
	}
	sharding, err := shardingOf(selected, opts)
	if err != nil {
		return nil, err
	}
	if opts.LeaderElectionNamespace == "" {
		opts.LeaderElectionNamespace = opts.Namespace
	}
	cfg, limit, err := ClientRateLimit(ctx, cfg, opts.QPS, opts.Burst)
	if err != nil {
		return nil, err
	}
	ctrl.Log.WithName("setup").Info("Set the client-side rate limit", "limit", limit)
	// HTTP/2 is off for the metrics and webhook servers (CVE-2023-44487, CVE-2023-39325).
	disableHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	metricsOpts := metricsserver.Options{
		BindAddress:   opts.MetricsAddr,
		SecureServing: opts.SecureMetrics,
		TLSOpts:       []func(*tls.Config){disableHTTP2},
	}
	if opts.SecureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	leaseDuration, renewDeadline, retryPeriod := opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod
	if opts.WebhookCertDir == "" {
		opts.WebhookCertDir = webhookcert.DefaultCertDir()
	}
	// Every replica serves webhooks; the server starts once the certificate is in the cert dir.
	webhookServer := webhookcert.NewServer(webhook.Options{
		Port:    opts.WebhookPort,
		CertDir: opts.WebhookCertDir,
		TLSOpts: []func(*tls.Config){disableHTTP2},
	})
	cacheOpts := cacheOptions(jobNamespaces(selected))
	if sharding != nil {
		cacheOpts = shardCache(cacheOpts, sharding, opts.ShardName)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: uncached}},
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
		GracefulShutdownTimeout:       &opts.GracefulShutdownTimeout,
		WebhookServer:                 webhookServer,
		Controller:                    config.Controller{SkipNameValidation: &opts.SkipControllerNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	opts.eventLimiter = newEventLimiter(opts.EventQPS, opts.EventBurst)
	// The controllers (the systems' and the webhook certificate's) are set up on a manager that
	// lets their running reconciles finish on shutdown (finishingManager).
	setupMgr := finishingManager{Manager: mgr, grace: opts.GracefulShutdownTimeout}
	systemMgr := setupMgr
	if sharding != nil {
		// Every shard runs the system's controllers; the leader also runs the assigner.
		systemMgr.everyReplica = true
		if err := addShardRunnables(mgr, sharding, selected[0].Name, opts); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, c := range selected {
		if err := c.Setup(ctx, systemMgr, opts); err != nil {
			errs = append(errs, fmt.Errorf("setting up %s controller: %w", c.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := setupWebhookServing(setupMgr, webhookServer, opts); err != nil {
		return nil, err
	}
	ctrl.Log.WithName("setup").Info("Configured controllers", "controllers", controllerNames(selected))
	return mgr, nil
}

// ManagedByLabel marks every object slipway creates; the operator caches only such Jobs.
const ManagedByLabel, ManagedByValue = "app.kubernetes.io/managed-by", "slipway"

// uncached kinds are always read from the API server: caching every Secret and ConfigMap of a
// cluster would cost memory and hold secrets in the operator for no gain. Controllers that react
// to their changes watch metadata only.
var uncached = []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}

// jobNamespaces returns the namespaces the selected systems read Jobs in (see
// Controller.JobNamespaces), sorted; nil for every namespace, and when none reads Jobs (no Job
// informer starts then).
func jobNamespaces(selected []Controller) []string {
	var out []string
	for _, c := range selected {
		if c.JobNamespaces == nil {
			return nil
		}
		for _, ns := range c.JobNamespaces() {
			if ns == cache.AllNamespaces {
				return nil
			}
			if !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
	}
	sort.Strings(out)
	return out
}

// cacheOptions keeps the cache small: managed fields are dropped from every cached object, only
// slipway's own Jobs are cached, and without their spec (controllers read a cached Job's metadata
// and status; the spec is what they wrote). Jobs are cached in jobNamespaces alone when it names
// any, else in every namespace.
func cacheOptions(jobNamespaces []string) cache.Options {
	jobs := cache.ByObject{
		Label:     labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedByValue}),
		Transform: stripJob,
	}
	if len(jobNamespaces) > 0 {
		jobs.Namespaces = map[string]cache.Config{}
		for _, ns := range jobNamespaces {
			jobs.Namespaces[ns] = cache.Config{}
		}
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			jobObject: jobs,
			// ConfigMaps and Secrets are watched (metadata only) for what users write: slipway's
			// own outputs (Job logs, Job values) are left out, so they cost no memory.
			&corev1.ConfigMap{}: {Label: notManaged},
			&corev1.Secret{}:    {Label: notManaged},
		},
	}
}

// jobObject is the key of the Jobs' cache options.
var jobObject client.Object = &batchv1.Job{}

var notManaged = func() labels.Selector {
	r, err := labels.NewRequirement(ManagedByLabel, selection.NotEquals, []string{ManagedByValue})
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}()

func stripJob(obj any) (any, error) {
	if j, ok := obj.(*batchv1.Job); ok {
		j.ManagedFields = nil
		j.Spec = batchv1.JobSpec{}
	}
	return obj, nil
}
