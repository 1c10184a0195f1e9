package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Trigger is the controller side of the receiver: it finds the WerfBundles watching repository
// and records the push on them durably (in the API server), returning how many it marked.
// repository is in NormalizeRepository form. An error means a push may not be recorded: the
// receiver answers 503 so the sender retries the delivery. Trigger must not block for long; the
// sender waits for the response, and ctx ends after triggerTimeout.
type Trigger interface {
	Trigger(ctx context.Context, repository string, tag string) (marked int, err error)
}

const (
	// DefaultAddr is where the receiver listens when Options.Addr is empty.
	DefaultAddr = ":8082"
	// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is not positive.
	DefaultMaxBodyBytes int64 = 1 << 20

	// shutdownTimeout bounds how long Start waits for requests in flight once its context ends.
	shutdownTimeout = 10 * time.Second
	// triggerTimeout bounds the Trigger calls of one request, below the server's WriteTimeout, so
	// a slow API server gets the sender a 503 rather than a dropped connection.
	triggerTimeout = 20 * time.Second
)

// Options configure a Server.
type Options struct {
	// Addr is the TCP address to listen on; DefaultAddr when empty.
	Addr string
	// Secret is the shared secret senders authenticate with. Start refuses to run without one,
	// and a Handler without one rejects every request.
	Secret []byte
	// Trigger receives every tag push. Required by Start.
	Trigger Trigger
	// MaxBodyBytes bounds a request body; DefaultMaxBodyBytes when not positive.
	MaxBodyBytes int64
	// Logger records handled and rejected requests; discarded when unset.
	Logger logr.Logger
}

// Server receives registry push notifications over HTTP and triggers the WerfBundles watching
// the pushed repository. It is a controller-runtime Runnable that runs on every replica: Trigger
// writes to the API server, where the leader's controller sees it.
type Server struct {
	addr    string
	trigger Trigger
	maxBody int64
	log     logr.Logger
	auth    authenticator
	handler http.Handler
}

var (
	_ manager.Runnable               = (*Server)(nil)
	_ manager.LeaderElectionRunnable = (*Server)(nil)
)

// New builds a Server from opts and registers the receiver's metrics with controller-runtime's
// registry (once per process). Options are validated by Start.
func New(opts Options) *Server {
	registerMetrics()
	s := &Server{
		addr:    opts.Addr,
		trigger: opts.Trigger,
		maxBody: opts.MaxBodyBytes,
		log:     opts.Logger,
		auth:    newAuthenticator(opts.Secret),
	}
	if s.addr == "" {
		s.addr = DefaultAddr
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	mux := http.NewServeMux()
	mux.Handle("/hook", s.hook(""))
	mux.Handle("/hook/distribution", s.hook(formatDistribution))
	mux.Handle("/hook/harbor", s.hook(formatHarbor))
	s.handler = mux
	return s
}

// NeedLeaderElection reports false: Trigger records pushes in the API server, so any replica can
// take a delivery, and a Service in front of all replicas always reaches one that listens.
func (s *Server) NeedLeaderElection() bool { return false }

// Handler returns the HTTP handler serving the hook endpoints, for tests and for mounting on
// another server.
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on the configured address and serves until ctx ends, then shuts down gracefully:
// it stops accepting connections and waits for requests in flight, up to a bound.
func (s *Server) Start(ctx context.Context) error {
	switch {
	case len(s.auth.secret) == 0:
		return errors.New("werfbundle receiver: refusing to start without a shared secret")
	case s.trigger == nil:
		return errors.New("werfbundle receiver: no Trigger configured")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("werfbundle receiver: listening on %s: %w", s.addr, err)
	}
	// Requests keep the manager's context values (the logger) but not its cancellation, so a
	// delivery in flight when the manager stops completes instead of failing half-way.
	base := logr.NewContext(context.WithoutCancel(ctx), s.log)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.log.Info("Started push notification receiver", "addr", ln.Addr().String())

	select {
	case err := <-served:
		return fmt.Errorf("werfbundle receiver: serving: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("werfbundle receiver: shutting down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("werfbundle receiver: serving: %w", err)
	}
	s.log.Info("Stopped push notification receiver")
	return nil
}

// summary is the body of a 202 response, and of a 503 with Error set.
type summary struct {
	// Events counts the distinct tag pushes in the notification.
	Events int `json:"events"`
	// Triggered counts the WerfBundles the pushes were recorded on (once per bundle per push).
	Triggered int `json:"triggered"`
	// Error says why some pushes may not be recorded (503 only).
	Error string `json:"error,omitempty"`
}

// hook serves one endpoint; format is empty to detect it from the request.
func (s *Server) hook(format string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := s.log.WithValues("path", r.URL.Path, "remoteAddr", r.RemoteAddr)
		// Rejections of unauthenticated requests are logged at V(1) only, so anyone able to reach
		// the port cannot flood the log; slipway_werfbundle_webhook_requests_total counts them all.
		quiet := log.V(1)
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			s.reject(w, quiet, http.StatusMethodNotAllowed, resultMethodNotAllowed, "only POST is allowed")
			return
		}
		// Never log the Authorization header or the signature; they carry the secret or depend on it.
		headerOK := s.auth.authorization(r.Header.Get("Authorization"))
		sig := r.Header.Get(SignatureHeader)
		if !headerOK && sig == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="slipway"`)
			s.reject(w, quiet, http.StatusUnauthorized, resultUnauthorized, "missing or invalid credentials")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
		if err != nil {
			if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
				s.reject(w, loudIf(headerOK, log), http.StatusRequestEntityTooLarge, resultTooLarge,
					fmt.Sprintf("body exceeds %d bytes", s.maxBody))
				return
			}
			s.reject(w, loudIf(headerOK, log), http.StatusBadRequest, resultBadRequest, "reading the body failed")
			return
		}
		if !headerOK && !s.auth.signature(sig, body) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="slipway"`)
			s.reject(w, quiet, http.StatusUnauthorized, resultUnauthorized, "missing or invalid credentials")
			return
		}
		p, err := parse(hints{
			contentType: r.Header.Get("Content-Type"),
			ceType:      r.Header.Get("Ce-Type"),
			format:      format,
		}, body)
		if err != nil {
			s.reject(w, log, http.StatusBadRequest, resultBadRequest, err.Error())
			return
		}

		log = log.WithValues("format", p.format)
		ctx, cancel := context.WithTimeout(logr.NewContext(r.Context(), log), triggerTimeout)
		defer cancel()
		res := summary{Events: len(p.events)}
		failed := 0
		for _, ev := range p.events {
			marked := 0
			var err error
			if s.trigger != nil { // only a Handler used without Start can lack one
				marked, err = s.trigger.Trigger(ctx, ev.repository, ev.tag)
				marked = max(marked, 0)
			}
			res.Triggered += marked
			if err != nil {
				failed++
				log.Error(err, "Recording a pushed tag failed", "repository", ev.repository, "tag", ev.tag, "marked", marked)
				continue
			}
			log.V(1).Info("Recorded pushed tag on WerfBundles", "repository", ev.repository, "tag", ev.tag, "marked", marked)
		}
		webhookTriggers.Add(float64(res.Triggered))
		if failed > 0 {
			// Nothing is acknowledged that is not in the API server: the sender retries the whole
			// delivery, and marking a bundle again only makes one more poll.
			webhookRequests.WithLabelValues(resultFailed).Inc()
			res.Error = fmt.Sprintf("recording %d of %d pushes failed; retry the delivery", failed, res.Events)
			log.Info("Failed to record push notification", "events", res.Events, "failed", failed, "triggered", res.Triggered)
			w.Header().Set("Retry-After", "10")
			writeJSON(w, http.StatusServiceUnavailable, res)
			return
		}
		webhookRequests.WithLabelValues(resultAccepted).Inc()
		if len(p.events) > 0 {
			log.Info("Handled push notification", "events", res.Events, "ignored", p.ignored, "triggered", res.Triggered)
		} else {
			// Pull and delete notifications are routine for registries that send everything.
			log.V(1).Info("Handled notification without tag pushes", "ignored", p.ignored)
		}
		writeJSON(w, http.StatusAccepted, res)
	})
}

// loudIf returns log for an authenticated request and log.V(1) otherwise.
func loudIf(authenticated bool, log logr.Logger) logr.Logger {
	if authenticated {
		return log
	}
	return log.V(1)
}

// reject answers a request the receiver will not act on, counts it and logs why.
func (s *Server) reject(w http.ResponseWriter, log logr.Logger, code int, result, msg string) {
	webhookRequests.WithLabelValues(result).Inc()
	log.Info("Rejected push notification", "status", code, "reason", msg)
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
