// Package server is the operator manager's HTTP API: every route in routes.go, one error shape
// (errors.go), strict JSON decoding (decode.go), the middleware chain (middleware.go), and the
// OpenAPI document built from the same route table (openapi.go).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/gzhttp"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/operators/sourceauth"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Config is what the serve command sets.
type Config struct {
	// MaxBodyBytes limits every request body (413 beyond it).
	MaxBodyBytes int64
	// RequestTimeout bounds one request's work (cluster calls included).
	RequestTimeout time.Duration
	// ClusterConcurrency bounds parallel calls to clusters within one request (CRD validation).
	ClusterConcurrency int
	// EventPoll is how often a deployment's event stream (SSE) reads the store for new events;
	// EventHeartbeat how long a stream may stay silent before a comment line keeps it open.
	EventPoll      time.Duration
	EventHeartbeat time.Duration
	// UI is how the web UI signs in (GET /api/v1/ui/config, POST /api/v1/session).
	UI UIConfig
}

// DefaultConfig is the shipped configuration.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 4 << 20, RequestTimeout: 60 * time.Second, ClusterConcurrency: 10,
		EventPoll: 500 * time.Millisecond, EventHeartbeat: 15 * time.Second}
}

// Rollouts is the rollout engine as the API uses it (*engine.Engine): requests that change a
// deployment, and Wake after an approval decision so the deployment moves on at once.
type Rollouts interface {
	Submit(ctx context.Context, req *api.DeploymentRequest, requestedBy, requestID string) (*store.Deployment, error)
	DryRun(ctx context.Context, req *api.DeploymentRequest, requestedBy, requestID string) (*api.DryRun, error)
	Cancel(ctx context.Context, id, by string) (*store.Deployment, error)
	Rollback(ctx context.Context, id, by, reason string) (*store.Deployment, error)
	Switch(ctx context.Context, id, by string) (*store.Deployment, error)
	Pause(ctx context.Context, id, by, reason string) (*store.Deployment, error)
	Resume(ctx context.Context, id, by string) (*store.Deployment, error)
	Wake()
	// PlanOptions are the engine's plan settings: a deployment's waiting reason re-plans it with
	// them (strategy.PlanOf), so its stages and holds are the engine's.
	PlanOptions() strategy.Options
}

// Deps are the services the API calls.
type Deps struct {
	Store    store.Store
	Clusters *clusters.Manager
	Charts   *operators.Charts
	Rollouts Rollouts
	Verifier auth.Verifier
	Limiter  *ratelimit.Limiter
	Logger   *slog.Logger
	Now      func() time.Time
	// Refresher refreshes operators' chart versions (POST /operators/{name}/refresh, PATCH);
	// nil: one over Store and Charts whose loop is not started.
	Refresher *refresh.Refresher
	// Notifications configures channels (the /notifications routes); nil: those routes answer 503.
	Notifications *notifications.Service
	// Sealer seals operators' chart source credentials; nil: the cluster manager's keyring.
	Sealer sourceauth.Sealer
	// UI serves the web UI (ui.New) at every GET or HEAD path outside the API (/api/…) and
	// /health; nil: no UI, those paths are JSON 404s like any unknown path.
	UI http.Handler
	// SessionSecret is the HS256 secret sign-in tickets are checked with and session tokens
	// minted with (POST /api/v1/session); nil: no session exchange.
	SessionSecret []byte
}

// Server serves the API.
type Server struct {
	cfg      Config
	store    store.Store
	clusters *clusters.Manager
	charts   *operators.Charts
	rollouts Rollouts
	refresh  *refresh.Refresher
	sealer   sourceauth.Sealer
	verifier auth.Verifier
	limiter  *ratelimit.Limiter
	log      *slog.Logger
	now      func() time.Time
	audit    *audit.Recorder
	openapi  []byte
	handler  http.Handler
	// notifications configures channels and sends test notifications (nil: 503).
	notifications *notifications.Service
	// ui serves the web UI outside the API (nil: none); sessionSecret mints session tokens.
	ui            http.Handler
	sessionSecret []byte
	// clientLimiter limits public routes per client address (POST /api/v1/session).
	clientLimiter *ratelimit.Limiter
	// stopping is closed when Serve begins its graceful shutdown: event streams end then, so
	// that their clients reconnect (to another replica, with Last-Event-ID) instead of holding
	// the shutdown up until its grace runs out.
	stopping     chan struct{}
	stoppingOnce sync.Once
}

// New builds the server and its routes.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Store == nil || deps.Verifier == nil || deps.Clusters == nil || deps.Charts == nil || deps.Rollouts == nil {
		return nil, errors.New("server: a store, a token verifier, a cluster manager, a chart source and the rollout engine are required")
	}
	def := DefaultConfig()
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = def.MaxBodyBytes
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = def.RequestTimeout
	}
	if cfg.ClusterConcurrency <= 0 {
		cfg.ClusterConcurrency = def.ClusterConcurrency
	}
	if cfg.EventPoll <= 0 {
		cfg.EventPoll = def.EventPoll
	}
	if cfg.EventHeartbeat <= 0 {
		cfg.EventHeartbeat = def.EventHeartbeat
	}
	if cfg.UI.SessionTTL <= 0 {
		cfg.UI.SessionTTL = DefaultSessionTTL
	}
	if len(cfg.UI.OIDCScopes) == 0 {
		cfg.UI.OIDCScopes = slices.Clone(DefaultUIScopes)
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Limiter == nil {
		deps.Limiter = ratelimit.New(ratelimit.DefaultRules(), deps.Now)
	}
	s := &Server{
		cfg: cfg, store: deps.Store, clusters: deps.Clusters, charts: deps.Charts, rollouts: deps.Rollouts,
		verifier: deps.Verifier, limiter: deps.Limiter, log: deps.Logger, now: deps.Now, stopping: make(chan struct{}),
	}
	s.audit = audit.NewRecorder(deps.Store, deps.Logger, deps.Now)
	s.notifications = deps.Notifications
	s.ui, s.sessionSecret = deps.UI, deps.SessionSecret
	s.clientLimiter = ratelimit.New(clientRules(deps.Limiter.Rules()), deps.Now)
	if s.sealer = deps.Sealer; s.sealer == nil {
		if k := deps.Clusters.Keyring(); k != nil {
			s.sealer = k
		}
	}
	if s.refresh = deps.Refresher; s.refresh == nil {
		r, err := NewRefresher(refresh.Config{Store: deps.Store, Charts: deps.Charts, Logger: deps.Logger, Now: deps.Now,
			Credentials: sourceauth.Lookup(deps.Store, s.sealer)})
		if err != nil {
			return nil, err
		}
		s.refresh = r
	}
	h, err := s.buildHandler()
	if err != nil {
		return nil, err
	}
	if s.handler, err = compressed(h); err != nil {
		return nil, err
	}
	return s, nil
}

// compressed gzips the answers of clients that accept it (the fleet of 10,000 cells is 3 MB of
// JSON, the web UI's scripts 791 KB; a fifth to a third of that goes over the wire), from 1 KiB
// up. An event stream is never compressed: each event must reach the client when it is written.
func compressed(h http.Handler) (http.Handler, error) {
	wrap, err := gzhttp.NewWrapper(gzhttp.MinSize(1024), gzhttp.ExceptContentTypes([]string{"text/event-stream"}))
	if err != nil {
		return nil, fmt.Errorf("compression: %w", err)
	}
	return wrap(h), nil
}

// Handler is the API with every middleware.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on l until ctx ends, then shuts down gracefully (in-flight requests get
// shutdownGrace; event streams end at once). With tlsConfig nil it serves plain HTTP.
func (s *Server) Serve(ctx context.Context, l net.Listener, tlsConfig *tls.Config, shutdownGrace time.Duration) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	s.stoppingOnce.Do(func() { close(s.stopping) })
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

// TLSConfig is the server's TLS setup: TLS 1.2 or newer, with the certificate re-read when the
// files change (a renewed certificate is served without a restart).
func TLSConfig(certFile, keyFile string) (*tls.Config, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.get(nil); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get}, nil
}

// certReloader loads a key pair again when either file's modification time or size changes.
type certReloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	stamp             string
	cert              *tls.Certificate
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	stamp := fileStamp(r.certFile) + "|" + fileStamp(r.keyFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && stamp == r.stamp {
		return r.cert, nil
	}
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert != nil {
			// A half-written renewal: keep serving the previous certificate until both files agree.
			return r.cert, nil
		}
		return nil, fmt.Errorf("loading the TLS certificate: %w", err)
	}
	r.cert, r.stamp = &c, stamp
	return r.cert, nil
}

func fileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d-%d", fi.ModTime().UnixNano(), fi.Size())
}
