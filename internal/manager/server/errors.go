package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Error is a refusal with its status: handlers return it (or any error, which writeError maps);
// only Code, Message and Details reach the client, as the API's one error body (api.Error).
type Error struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// RetryAfter, when set, becomes the Retry-After header (seconds).
	RetryAfter int `json:"-"`
	// Err is the cause, logged and never sent.
	Err error `json:"-"`
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// body is what the client gets of e.
func (e *Error) body() api.Error {
	return api.Error{Code: e.Code, Message: e.Message, Details: e.Details}
}

func errInvalid(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Message: fieldMessage(field, fmt.Sprintf(format, args...)),
		Details: map[string]any{"field": field}}
}

func errNotFound(kind, name string) *Error {
	return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: fmt.Sprintf("%s %q not found", kind, name),
		Details: map[string]any{"kind": kind, "name": name}}
}

func errAlreadyExists(kind, name string) *Error {
	return &Error{Status: http.StatusConflict, Code: api.CodeAlreadyExists, Message: fmt.Sprintf("%s %q already exists", kind, name),
		Details: map[string]any{"kind": kind, "name": name}}
}

func fieldMessage(field, msg string) string {
	if field == "" {
		return msg
	}
	return field + ": " + msg
}

// toError maps any error a handler returns to the one shape: bad input to 400 naming the field,
// store errors to 404/409 (a conflict's message says which state refused the request), auth errors to 401, everything else to a 500 that says only the request id.
func toError(err error) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	if e, ok := invalid.As(err); ok {
		details := map[string]any{"field": e.Field}
		if e.Reason != "" {
			details["reason"] = e.Reason
		}
		return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Message: e.Error(), Details: details, Err: err}
	}
	var tokErr *auth.TokenError
	switch {
	case errors.Is(err, auth.ErrNoToken), errors.As(err, &tokErr):
		return &Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthenticated, Message: err.Error(), Err: err}
	case errors.Is(err, store.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "not found", Err: err}
	case errors.Is(err, store.ErrAlreadyExists):
		return &Error{Status: http.StatusConflict, Code: api.CodeAlreadyExists, Message: "already exists", Err: err}
	case errors.Is(err, store.ErrConflict):
		// The state refused the request (a finished deployment, a decided approval): the message
		// says which state, for people; the store's sentinel suffix is dropped.
		msg := strings.TrimSuffix(err.Error(), ": "+store.ErrConflict.Error())
		return &Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: msg, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "the request timed out", Err: err}
	}
	return &Error{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: "internal error", Err: err}
}

// writeError writes err in the one shape; a 5xx is logged with its cause and answered with the
// request id only.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := toError(err)
	ctx := notedLogContext(r.Context()) // a refusal about a deployment is one of its lines
	if e.Status >= 500 {
		s.log.ErrorContext(ctx, "server: Request failed", "err", err, "method", r.Method, "path", r.URL.Path)
		e = &Error{Status: e.Status, Code: e.Code, Message: e.Message}
	} else if e.Err != nil {
		s.log.DebugContext(ctx, "server: Request refused", "err", e.Err, "status", e.Status)
	}
	if id := telemetry.RequestID(ctx); id != "" {
		// e may be shared between requests (errSignedOut): the id goes into a copy.
		c := *e
		c.Details = maps.Clone(e.Details)
		if c.Details == nil {
			c.Details = map[string]any{}
		}
		c.Details["requestId"] = id
		e = &c
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="slipway-manager"`)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.RetryAfter))
	}
	writeJSON(ctx, s.log, w, e.Status, e.body())
}

func writeJSON(ctx context.Context, log *slog.Logger, w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.DebugContext(ctx, "server: Writing response failed", "err", err)
	}
}
