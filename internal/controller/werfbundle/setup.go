package werfbundle

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/registry"
)

// Config holds the werfbundle flags.
type Config struct {
	WerfImage         string
	MaxInFlight       int
	Concurrency       int
	JobDeadline       time.Duration
	StatusDelay       time.Duration
	LogPruneEvery     time.Duration
	WebhookAddr       string
	WebhookSecretFile string
	// AllowCrossNamespace lifts tenant isolation (see Reconciler.AllowCrossNamespace).
	AllowCrossNamespace bool
	// JobEnv is added to the Jobs' environment (see Reconciler.JobEnv).
	JobEnv []corev1.EnvVar
}

// Controller returns the WerfBundle system for the operator binary.
func Controller() operator.Controller {
	cfg := &Config{}
	return operator.Controller{
		Name: "werfbundle",
		BindFlags: func(fs *flag.FlagSet) {
			fs.StringVar(&cfg.WerfImage, "werfbundle-werf-image", DefaultWerfImage, "werf image the converge Jobs run")
			fs.IntVar(&cfg.MaxInFlight, "werfbundle-registry-max-in-flight", DefaultMaxInFlight, "registry operations in flight across all bundles")
			fs.IntVar(&cfg.Concurrency, "werfbundle-concurrency", DefaultConcurrency, "WerfBundles reconciled in parallel")
			fs.DurationVar(&cfg.JobDeadline, "werfbundle-job-deadline", DefaultJobDeadline, "activeDeadlineSeconds of converge Jobs")
			fs.DurationVar(&cfg.StatusDelay, "werfbundle-status-delay", DefaultStatusDelay,
				"how long the status write that records a Job just created waits, behind every other queued bundle, so that the Job is a deploy's only write before it; 0 writes it at once")
			fs.DurationVar(&cfg.LogPruneEvery, "werfbundle-log-prune-interval", 10*time.Minute, "how often expired Job logs are deleted")
			fs.StringVar(&cfg.WebhookAddr, "werfbundle-webhook-bind-address", "", "address of the registry push webhook receiver (e.g. :9292); empty disables it")
			fs.StringVar(&cfg.WebhookSecretFile, "werfbundle-webhook-secret-file", "", "file holding the webhook shared secret")
			fs.BoolVar(&cfg.AllowCrossNamespace, "werfbundle-allow-cross-namespace", false,
				"let every WerfBundle deploy into any namespace and read values there (single-tenant clusters); "+
					"otherwise a namespace accepts bundles of other namespaces only through its werf.io/accept-bundles-from annotation")
			fs.Var(jobEnvFlag{env: &cfg.JobEnv}, "werfbundle-job-env",
				"NAME=VALUE added to the environment of the werf Jobs (repeatable): HTTPS_PROXY, WERF_* settings, or "+
					"KUBERNETES_SERVICE_HOST/PORT where pods cannot reach the kubernetes Service")
		},
		Setup: func(ctx context.Context, mgr ctrl.Manager, opts operator.Options) error {
			return cfg.setup(ctx, mgr, opts)
		},
		Shard: sharding,
	}
}

func (cfg *Config) setup(ctx context.Context, mgr ctrl.Manager, opts operator.Options) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          opts.EventRecorder(mgr, "werfbundle-controller"),
		Limiter:           registry.NewLimiter(cfg.MaxInFlight),
		Logs:              PodLogs{REST: cs.CoreV1().RESTClient()},
		OperatorNamespace: opts.Namespace,
		WerfImage:         cfg.WerfImage,
		JobDeadline:       cfg.JobDeadline,
		StatusDelay:       cfg.StatusDelay,
		JobEnv:            cfg.JobEnv,

		AllowCrossNamespace: cfg.AllowCrossNamespace,
	}
	if opts.Sharded() {
		r.shard = &shardJobs{reader: mgr.GetAPIReader(), writer: mgr.GetClient()}
	}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: cfg.Concurrency}); err != nil {
		return err
	}
	if err := mgr.Add(&LogPruner{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: opts.Namespace,
		Every: cfg.LogPruneEvery, Now: time.Now}); err != nil {
		return err
	}
	if cfg.WebhookAddr == "" {
		return nil
	}
	if cfg.WebhookSecretFile == "" {
		return errors.New("--werfbundle-webhook-secret-file is required with --werfbundle-webhook-bind-address")
	}
	secret, err := os.ReadFile(cfg.WebhookSecretFile)
	if err != nil {
		return err
	}
	return mgr.Add(receiver.New(receiver.Options{
		Addr: cfg.WebhookAddr, Secret: bytes.TrimSpace(secret), Trigger: r, Logger: mgr.GetLogger().WithName("werfbundle-webhook"),
	}))
}
