package webapp

import (
	"context"
	"flag"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/slipway-dev/slipway/internal/operator"
	webappwebhook "github.com/slipway-dev/slipway/internal/webhook/webapp"
)

// Config holds the webapp flags.
type Config struct {
	Concurrency      int
	ResyncPeriod     time.Duration
	ProgressDeadline time.Duration
	RetryBase        time.Duration
	RetryMax         time.Duration
}

// Controller returns the WebApp system for the operator binary: the reconciler (on the leader)
// and the admission webhooks of package internal/webhook/webapp (served by every replica).
func Controller() operator.Controller {
	cfg := &Config{}
	hooks := &webappwebhook.Options{}
	return operator.Controller{
		Name: "webapp",
		BindFlags: func(fs *flag.FlagSet) {
			fs.IntVar(&cfg.Concurrency, "webapp-concurrency", 8, "WebApps reconciled in parallel")
			fs.DurationVar(&cfg.ResyncPeriod, "webapp-resync-period", DefaultResyncPeriod, "how often every WebApp is reconciled with no event (±10 %)")
			fs.DurationVar(&cfg.ProgressDeadline, "webapp-progress-deadline", time.Duration(DefaultProgressDeadline)*time.Second,
				"progressDeadlineSeconds of the Deployments: a rollout without progress for this long makes the WebApp Failed")
			fs.DurationVar(&cfg.RetryBase, "webapp-retry-base-delay", DefaultRetryBase, "first retry delay after a failed reconcile, doubling per failure")
			fs.DurationVar(&cfg.RetryMax, "webapp-retry-max-delay", DefaultRetryMax, "longest retry delay after failed reconciles")
			hooks.BindFlags(fs)
		},
		Setup: func(_ context.Context, mgr ctrl.Manager, opts operator.Options) error {
			if err := webappwebhook.Setup(mgr, *hooks); err != nil {
				return err
			}
			return cfg.setup(mgr, opts)
		},
		// WebApp reads no Job: an operator running it beside Catalyst alone caches Jobs in the
		// build namespace only.
		JobNamespaces: func() []string { return nil },
		Shard:         sharding,
	}
}

func (cfg *Config) setup(mgr ctrl.Manager, opts operator.Options) error {
	r := &Reconciler{
		Client:           mgr.GetClient(),
		Recorder:         opts.EventRecorder(mgr, "webapp-controller"),
		ResyncPeriod:     cfg.ResyncPeriod,
		ProgressDeadline: cfg.ProgressDeadline,
	}
	if opts.Sharded() {
		r.ownedReader = mgr.GetAPIReader()
	}
	return r.SetupWithManager(mgr, controller.Options{
		MaxConcurrentReconciles: cfg.Concurrency,
		RateLimiter:             NewRateLimiter(cfg.RetryBase, cfg.RetryMax),
	})
}
