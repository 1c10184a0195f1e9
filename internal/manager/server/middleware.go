package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// statusWriter remembers the status a handler wrote, for the access log and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestInfo carries what the inner handler learns (the caller; "ui" for the web UI's pages;
// the deployment the request is about, deploymentLogContext) out to the access log line.
type requestInfo struct {
	user, route string
	deployment  *telemetry.Deployment
}

type requestInfoKey struct{}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// outer wraps the whole mux: request id (kept from X-Request-Id when well-formed), tracing
// (W3C traceparent in), panic recovery, one access log line with duration, and request metrics.
func (s *Server) outer(mux *http.ServeMux) http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			id = telemetry.NewRequestID()
		}
		info := &requestInfo{}
		ctx := context.WithValue(telemetry.WithRequestID(r.Context(), id), requestInfoKey{}, info)
		r = r.WithContext(ctx)
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				s.log.ErrorContext(notedLogContext(ctx), "server: Handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if sw.status == 0 {
					s.writeError(sw, r, fmt.Errorf("panic: %v", p))
				}
			}
			route := r.Pattern
			if route == "" {
				route = cmp.Or(info.route, "unmatched")
			}
			elapsed := time.Since(start)
			telemetry.ObserveHTTPRequest(route, r.Method, sw.status, elapsed)
			logCtx := r.Context()
			if info.user != "" {
				logCtx = telemetry.WithUserID(logCtx, info.user)
			}
			// A request about a deployment: its line has the design's fields, userId the caller.
			logCtx = notedLogContext(logCtx)
			s.log.InfoContext(logCtx, "server: Request", "method", r.Method, "route", route, "path", r.URL.Path,
				"status", sw.status, "durationMs", float64(elapsed.Microseconds())/1000, "remote", r.RemoteAddr)
		}()
		if h, pattern := mux.Handler(r); pattern == "" {
			if s.ui != nil && !isAPIPath(r.URL.Path) {
				info.route = "ui"
				s.ui.ServeHTTP(sw, r)
				return
			}
			s.unmatched(sw, r, h)
			return
		}
		mux.ServeHTTP(sw, r)
	})
	return otelhttp.NewHandler(h, "http.server",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if r.Pattern != "" {
				return r.Pattern
			}
			return r.Method + " " + r.URL.Path
		}))
}

// wrap turns a route into a handler: authentication (unless public), the role guard, the per-user
// rate limit, the request timeout (not for a route that streams: it bounds its own work), and
// the error writer.
func (s *Server) wrap(rt route) http.Handler {
	label := rt.Method + " " + rt.Pattern
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rt.Stream {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		if rt.Public && rt.ClientLimit {
			if err := s.limitClient(r, rt); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if !rt.Public {
			id, err := s.authenticate(r)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			r = r.WithContext(telemetry.WithUserID(auth.WithIdentity(r.Context(), id), id.Subject))
			if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
				info.user = id.Subject
			}
			if !rt.AnyCaller && !id.Has(rt.Roles...) {
				s.audit.Denied(r.Context(), rt.Action, rt.Pattern, r.URL.Path)
				s.writeError(w, r, &Error{Status: http.StatusForbidden, Code: api.CodeForbidden,
					Message: fmt.Sprintf("%s needs one of the roles %v; %s has %v", label, rt.Roles, id.Subject, id.Roles)})
				return
			}
			if ok, retry := s.limiter.Allow(id.Subject, label); !ok {
				telemetry.RateLimited(rt.Pattern)
				secs := int((retry + time.Second - 1) / time.Second)
				s.writeError(w, r, &Error{Status: http.StatusTooManyRequests, Code: api.CodeRateLimited, RetryAfter: secs,
					Message: fmt.Sprintf("rate limit for %s exceeded: retry in %d s", label, secs),
					Details: map[string]any{"retryAfterSeconds": secs}})
				return
			}
		}
		if err := rt.Handle(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) authenticate(r *http.Request) (*auth.Identity, error) {
	raw, err := auth.FromRequest(r)
	if err != nil {
		return nil, err
	}
	if isLoginTicket(raw) {
		return nil, errTicketAsBearer
	}
	id, err := s.verifier.Verify(r.Context(), raw)
	if err != nil {
		return nil, err
	}
	// A token signed out on any replica (DELETE /api/v1/session) is refused: signout.go.
	if err := s.refuseRevoked(r.Context(), id); err != nil {
		return nil, err
	}
	return id, nil
}

// isAPIPath reports whether p is the API's (/api, /api/…) or /health's: those paths never reach
// the web UI, so an unknown one is a JSON 404.
func isAPIPath(p string) bool {
	return p == "/api" || strings.HasPrefix(p, "/api/") || p == "/health" || strings.HasPrefix(p, "/health/")
}

// unmatched answers a request no route matches in the one error shape: 405 with Allow when the
// path exists for other methods, 404 otherwise (the mux's redirects pass through). h is the mux's
// own answer for it.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, h http.Handler) {
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch {
	case probe.status == http.StatusMethodNotAllowed:
		w.Header().Set("Allow", probe.header.Get("Allow"))
		s.writeError(w, r, &Error{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed",
			Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + probe.header.Get("Allow")})
	case probe.status >= 300 && probe.status < 400:
		http.Redirect(w, r, probe.header.Get("Location"), probe.status)
	default:
		s.writeError(w, r, &Error{Status: http.StatusNotFound, Code: api.CodeNotFound,
			Message: "no route " + r.Method + " " + r.URL.Path + " (see /api/v1/openapi.json)"})
	}
}

// headerProbe records what the mux's own 404/405/redirect handlers would answer.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }
