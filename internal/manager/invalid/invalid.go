// Package invalid is the manager's one error type for bad input: it names the field that is wrong
// and says why, and the API answers it with 400. Services return it for anything the caller can
// fix (a malformed kubeconfig, an unreachable cluster, an unknown chart version); everything else
// is an internal error, logged and never echoed.
package invalid

import (
	"errors"
	"fmt"
)

// Error is bad input in one field. Field is the request's JSON path ("kubeconfig",
// "chart.repository"); Reason is a short machine-readable word ("required", "unreachable",
// "unauthorized", "notFound", "format"); Message is for people and must never hold a secret.
type Error struct {
	Field   string
	Reason  string
	Message string
	// Err is the cause, for logs only (it may hold details not fit for the response).
	Err error
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Field returns an *Error for field with a formatted message and reason "invalid".
func Field(field, format string, args ...any) *Error {
	return &Error{Field: field, Reason: "invalid", Message: fmt.Sprintf(format, args...)}
}

// Reasoned returns an *Error with an explicit reason and a cause kept for logs.
func Reasoned(field, reason string, cause error, format string, args ...any) *Error {
	return &Error{Field: field, Reason: reason, Message: fmt.Sprintf(format, args...), Err: cause}
}

// As returns the *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
