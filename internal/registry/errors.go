package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Operations named in Error.Op.
const (
	OpListTags       = "list tags"
	OpManifestExists = "check manifest"
	OpToken          = "fetch token"
)

// Error is a failed registry operation. StatusCode is 0 when no HTTP response arrived (network
// failure, timeout, cancellation), in which case Err holds the cause.
type Error struct {
	// Op is what was attempted, one of the Op* constants.
	Op string
	// Repository is the repository the operation was about, e.g. ghcr.io/org/bundle.
	Repository string
	// StatusCode is the HTTP status of the failing response, or 0.
	StatusCode int
	// Code is the first OCI error code of the response body (e.g. NAME_UNKNOWN), when present.
	Code string
	// RetryAfter is the server's Retry-After hint on a 429 or 503 response, or 0.
	RetryAfter time.Duration
	// Message says what went wrong. It never holds credentials.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("registry: ")
	b.WriteString(e.Op)
	if e.Repository != "" {
		b.WriteString(" ")
		b.WriteString(e.Repository)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	if e.Code != "" {
		b.WriteString(": ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is transient: the same request may succeed later without any
// change on the caller's side. That is a network failure or timeout, 408, 429 and any 5xx
// response. Authentication failures, unknown repositories, malformed or oversized responses,
// certificate errors and cancellation are not.
func IsRetryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch {
	case e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusTooManyRequests:
		return true
	case e.StatusCode >= 500 && e.StatusCode <= 599:
		return true
	case e.StatusCode != 0 || e.Err == nil:
		return false
	}
	return isTransientTransportError(e.Err)
}

// RetryAfter returns the server's Retry-After hint carried by err, if any.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}

// IsAuth reports whether the registry or its token service refused the credentials (401 or 403).
func IsAuth(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// IsNotFound reports whether the registry answered 404: the repository (or manifest) is unknown.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// isTransientTransportError reports whether err, from a request that got no (complete)
// response, is a network failure worth retrying: a timeout, a refused, reset or closed
// connection, a DNS failure. Everything else (cancellation by the caller, oversized bodies,
// links leaving the registry, unusable realms, TLS verification failures) is not.
func isTransientTransportError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, errBodyTooLarge) || errors.Is(err, errOtherHost) {
		return false
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verification) {
		return false
	}
	var (
		timeout interface{ Timeout() bool }
		opErr   *net.OpError
		dnsErr  *net.DNSError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &timeout) && timeout.Timeout():
		return true
	case errors.As(err, &opErr), errors.As(err, &dnsErr):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP-date. It returns 0 for an
// absent, malformed or past value, and caps the result at MaxRetryAfter.
func parseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(value); err == nil {
		d = at.Sub(now)
	}
	if d <= 0 {
		return 0
	}
	return min(d, MaxRetryAfter)
}

// parseErrorBody extracts the first error code and message of an OCI error body
// ({"errors":[{"code":..,"message":..}]}) or a token service error ({"error":..,
// "error_description":..}); for a short non-JSON, non-HTML body it returns the text itself.
func parseErrorBody(body []byte) (code, message string) {
	var oci struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
		Details          string `json:"details"`
	}
	if err := json.Unmarshal(body, &oci); err == nil {
		switch {
		case len(oci.Errors) > 0:
			return sanitize(oci.Errors[0].Code), sanitize(oci.Errors[0].Message)
		case oci.Error != "":
			return "", sanitize(strings.TrimSpace(oci.Error + " " + oci.ErrorDescription))
		case oci.Details != "":
			return "", sanitize(oci.Details)
		}
		return "", ""
	}
	text := strings.TrimSpace(string(body))
	if text == "" || strings.HasPrefix(text, "<") || strings.HasPrefix(text, "{") || strings.HasPrefix(text, "[") {
		return "", ""
	}
	return "", sanitize(text)
}

// errOtherHost refuses a pagination link that leaves the registry.
var errOtherHost = errors.New("link leaves the registry's scheme and host")
