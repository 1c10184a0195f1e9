package app

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/operators/sourceauth"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
	"github.com/slipway-dev/slipway/internal/manager/rollout/engine"
	"github.com/slipway-dev/slipway/internal/manager/server"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

type serveOptions struct {
	db   dbOptions
	keys keyOptions
	auth authOptions

	address        string
	metricsAddress string
	tlsCert        string
	tlsKey         string
	insecureHTTP   bool
	migrate        bool

	healthInterval    time.Duration
	healthConcurrency int
	rateLimits        string
	maxBodyBytes      int64
	requestTimeout    time.Duration
	shutdownGrace     time.Duration

	plainHTTPRegistries string

	refreshInterval    time.Duration
	refreshConcurrency int

	rollout rolloutOptions

	notifications notificationOptions

	ui uiOptions

	otlpEndpoint string
	logLevel     string
	logFormat    string
}

func (o *serveOptions) bind(fs *flag.FlagSet) {
	def := server.DefaultConfig()
	fs.StringVar(&o.address, "address", ":8443", "the API's listen address")
	fs.StringVar(&o.metricsAddress, "metrics-address", "127.0.0.1:9464", "Prometheus /metrics listen address (\"0\" turns it off)")
	fs.StringVar(&o.tlsCert, "tls-cert-file", "", "the API's TLS certificate (PEM); reloaded when the file changes")
	fs.StringVar(&o.tlsKey, "tls-key-file", "", "the API's TLS private key (PEM)")
	fs.BoolVar(&o.insecureHTTP, "insecure-http", false, "serve plain HTTP (only behind a TLS-terminating proxy, or for tests)")
	fs.BoolVar(&o.migrate, "migrate", true, "apply database migrations at start; with false, refuse to serve on an old schema")
	fs.DurationVar(&o.healthInterval, "cluster-health-interval", time.Minute, "how often every cluster's health is checked")
	fs.IntVar(&o.healthConcurrency, "cluster-health-concurrency", 10, "clusters checked at once")
	fs.StringVar(&o.rateLimits, "rate-limits", "", "per-user limits per route, e.g. \"POST /api/v1/clusters=5/min,GET /api/v1/operators=60/min\" (default: the design's)")
	fs.Int64Var(&o.maxBodyBytes, "max-body-bytes", def.MaxBodyBytes, "the largest request body accepted")
	fs.DurationVar(&o.requestTimeout, "request-timeout", def.RequestTimeout, "the longest a request may work")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", 15*time.Second, "how long in-flight requests get at shutdown")
	fs.StringVar(&o.plainHTTPRegistries, "plain-http-registries", "", "comma-separated OCI registry hosts (host:port) spoken to over plain HTTP, such as a local development registry")
	fs.DurationVar(&o.refreshInterval, "operator-refresh-interval", refresh.DefaultInterval, "how often every operator's chart versions are discovered again (each run jittered by ±10%)")
	fs.IntVar(&o.refreshConcurrency, "operator-refresh-concurrency", refresh.DefaultConcurrency, "operators whose chart versions one replica refreshes at once")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "OTLP/HTTP traces endpoint (host:port or URL); also $OTEL_EXPORTER_OTLP_ENDPOINT")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "json", "json or text")
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o := serveFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	if o.logFormat != "json" && o.logFormat != "text" {
		return fmt.Errorf("--log-format must be json or text, not %q", o.logFormat)
	}
	log := telemetry.NewLogger(stderr, level, o.logFormat)

	var tlsConfig *tls.Config
	switch {
	case o.insecureHTTP && (o.tlsCert != "" || o.tlsKey != ""):
		return errors.New("--insecure-http and --tls-cert-file/--tls-key-file exclude each other")
	case o.insecureHTTP:
		log.WarnContext(ctx, "manager: Serving plain HTTP (--insecure-http): tokens and kubeconfigs cross the network in the clear")
	case o.tlsCert == "" || o.tlsKey == "":
		return errors.New("no TLS certificate: pass --tls-cert-file and --tls-key-file (or --insecure-http behind a TLS proxy)")
	default:
		c, err := server.TLSConfig(o.tlsCert, o.tlsKey)
		if err != nil {
			return err
		}
		tlsConfig = c
	}
	rules := ratelimit.DefaultRules()
	if o.rateLimits != "" {
		r, err := ratelimit.ParseRules(o.rateLimits)
		if err != nil {
			return fmt.Errorf("--rate-limits: %w", err)
		}
		rules = r
	}
	keyring, err := o.keys.load()
	if err != nil {
		return err
	}
	uiConfig, err := o.ui.config(o.auth.issuer)
	if err != nil {
		return err
	}
	o.auth.uiClientID = o.ui.clientID
	uiHandler, err := o.ui.handler(o.auth.issuer)
	if err != nil {
		return err
	}
	verifier, err := o.auth.verifier(ctx)
	if err != nil {
		return err
	}
	sessionSecret, err := o.auth.secret()
	if err != nil {
		return err
	}
	shutdownTracing, err := telemetry.SetupTracing(ctx, telemetry.TracingConfig{OTLPEndpoint: o.otlpEndpoint, ServiceName: "slipway-manager"})
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.WithoutCancel(ctx)) }()

	st, err := o.db.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.migrate {
		if err := st.Migrate(ctx); err != nil {
			return fmt.Errorf("migrating the database: %w", err)
		}
	}
	if err := st.CheckSchema(ctx); err != nil {
		return err
	}
	telemetry.SetOperatorCount(ctx, st)

	notes, err := o.notificationService(st, keyring, log)
	if err != nil {
		return err
	}
	cm, err := clusters.New(clusters.Config{
		Store: st, Keyring: keyring, Logger: log,
		HealthInterval: o.healthInterval, HealthConcurrency: o.healthConcurrency, OnRound: observeRound, HealthHook: notes,
	})
	if err != nil {
		return err
	}
	var plain []string
	for _, h := range strings.Split(o.plainHTTPRegistries, ",") {
		if h = strings.TrimSpace(h); h != "" {
			plain = append(plain, h)
		}
	}
	charts, err := operators.New(operators.Options{PlainHTTPRegistries: plain})
	if err != nil {
		return err
	}
	policy, err := o.rollout.policy()
	if err != nil {
		return err
	}
	bakeWindow, err := o.rollout.engineBakeWindow()
	if err != nil {
		return err
	}
	var eng *engine.Engine
	notifier, err := o.rollout.notifier(log, func(r notify.Result) { eng.MailResult(r) })
	if err != nil {
		return err
	}
	eng, err = engine.New(engine.Config{
		Store: st, Clusters: cm, Charts: charts, Credentials: sourceauth.Lookup(st, keyring), Notifier: notifier, Notifications: notes, Policy: policy, Logger: log,
		ReplicaID: o.rollout.replicaID, MaxConcurrent: o.rollout.maxConcurrent, Lease: o.rollout.lease,
		HealthInterval: o.rollout.healthInterval, FailureThreshold: o.rollout.failureThreshold,
		BlueRetention: o.rollout.blueRetention, SwitchMonitor: o.rollout.switchMonitor,
		InstallTimeout: o.rollout.installTimeout, MaxParallelInstalls: o.rollout.parallelInstalls, ApprovalTTL: o.rollout.approvalTTL, BakeWindow: bakeWindow, HealthLoop: true,
		Prometheus: func(ctx context.Context, cluster string) (analysis.Prometheus, error) {
			return analysis.Lookup(ctx, st, keyring, cluster)
		},
	})
	if err != nil {
		return err
	}
	if o.refreshInterval <= 0 || o.refreshConcurrency <= 0 {
		return fmt.Errorf("--operator-refresh-interval and --operator-refresh-concurrency must be positive, not %s and %d", o.refreshInterval, o.refreshConcurrency)
	}
	refresher, err := server.NewRefresher(refresh.Config{Store: st, Charts: charts, Credentials: sourceauth.Lookup(st, keyring), Logger: log, ReplicaID: eng.ReplicaID(),
		Interval: o.refreshInterval, Concurrency: o.refreshConcurrency})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{MaxBodyBytes: o.maxBodyBytes, RequestTimeout: o.requestTimeout, UI: uiConfig}, server.Deps{
		Store: st, Clusters: cm, Charts: charts, Verifier: verifier, Limiter: ratelimit.New(rules, time.Now), Logger: log, Notifications: notes,
		Rollouts: eng, Refresher: refresher, UI: uiHandler, SessionSecret: sessionSecret,
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", o.address)
	if err != nil {
		return fmt.Errorf("--address %s: %w (another program holds it? pass a free one)", o.address, err)
	}
	if o.metricsAddress != "0" && o.metricsAddress != "" {
		ml, err := net.Listen("tcp", o.metricsAddress)
		if err != nil {
			l.Close()
			return fmt.Errorf("--metrics-address %s: %w (pass a free one, or 0 to turn metrics off)", o.metricsAddress, err)
		}
		msrv := &http.Server{Handler: telemetry.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(ml) }()
		defer msrv.Close()
	}
	if err := cm.Start(ctx); err != nil {
		l.Close()
		return err
	}
	defer cm.Stop()
	if err := notes.Start(ctx); err != nil {
		l.Close()
		return err
	}
	defer notes.Stop()
	if notifier != nil {
		if err := notifier.Start(ctx); err != nil {
			l.Close()
			return err
		}
		defer notifier.Stop()
	}
	if err := eng.Start(ctx); err != nil {
		l.Close()
		return err
	}
	defer eng.Stop()
	if err := refresher.Start(ctx); err != nil {
		l.Close()
		return err
	}
	defer refresher.Stop()
	scheme := "https"
	if tlsConfig == nil {
		scheme = "http"
	}
	log.InfoContext(ctx, "manager: Serving", "url", fmt.Sprintf("%s://%s", scheme, l.Addr()), "engine", st.Engine(),
		"metrics", o.metricsAddress, "replica", eng.ReplicaID(), "approvalMail", notifier != nil)
	fmt.Fprintf(stdout, "serving %s://%s\n", scheme, l.Addr())
	if err := srv.Serve(ctx, l, tlsConfig, o.shutdownGrace); err != nil {
		return err
	}
	log.InfoContext(context.WithoutCancel(ctx), "manager: Stopped: in-flight requests finished")
	return nil
}

// observeRound turns a health round into metrics: each check's duration and the clusters per health.
func observeRound(r clusters.Round) {
	counts := map[string]int{}
	for _, res := range r.Results {
		telemetry.ObserveClusterHealthCheck(res.Duration)
		counts[string(res.Health)]++
	}
	if r.Err == nil {
		telemetry.SetClusterHealth(counts)
	}
}
