package registry

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		value string
		want  time.Duration
	}{
		"seconds":          {"30", 30 * time.Second},
		"spaces":           {" 5 ", 5 * time.Second},
		"zero":             {"0", 0},
		"negative":         {"-5", 0},
		"empty":            {"", 0},
		"garbage":          {"soon", 0},
		"fraction":         {"1.5", 0},
		"capped seconds":   {"999999999999", time.Hour},
		"overflow":         {"99999999999999999999999", 0},
		"http date":        {now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		"past date":        {now.Add(-time.Minute).Format(http.TimeFormat), 0},
		"capped date":      {now.Add(48 * time.Hour).Format(http.TimeFormat), time.Hour},
		"RFC 850 date":     {"Sunday, 01-Mar-26 12:00:10 GMT", 10 * time.Second},
		"ANSI C date":      {"Sun Mar  1 12:00:10 2026", 10 * time.Second},
		"date in the past": {"Thu, 01 Jan 1970 00:00:00 GMT", 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := parseRetryAfter(tt.value, now); got != tt.want {
				t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
}

func TestErrorClassification(t *testing.T) {
	status := func(code int) error { return &Error{Op: OpListTags, StatusCode: code} }
	cause := func(err error) error { return fmt.Errorf("wrapped: %w", &Error{Op: OpListTags, Err: err}) }
	tests := map[string]struct {
		err                       error
		retryable, auth, notFound bool
	}{
		"nil":                    {err: nil},
		"foreign error":          {err: errors.New("x")},
		"400":                    {err: status(400)},
		"401":                    {err: status(401), auth: true},
		"403":                    {err: status(403), auth: true},
		"404":                    {err: status(404), notFound: true},
		"408":                    {err: status(408), retryable: true},
		"429":                    {err: status(429), retryable: true},
		"500":                    {err: status(500), retryable: true},
		"502":                    {err: status(502), retryable: true},
		"503":                    {err: status(503), retryable: true},
		"timeout":                {err: cause(context.DeadlineExceeded), retryable: true},
		"cancelled":              {err: cause(context.Canceled)},
		"connection reset":       {err: cause(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), retryable: true},
		"connection refused":     {err: cause(syscall.ECONNREFUSED), retryable: true},
		"EOF":                    {err: cause(io.EOF), retryable: true},
		"DNS":                    {err: cause(&net.DNSError{Err: "no such host", Name: "x"}), retryable: true},
		"unknown authority":      {err: cause(x509.UnknownAuthorityError{})},
		"body too large":         {err: cause(errBodyTooLarge)},
		"unclassified transport": {err: cause(errors.New("realm is not a URL"))},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsRetryable(tt.err); got != tt.retryable {
				t.Errorf("IsRetryable = %v, want %v", got, tt.retryable)
			}
			if got := IsAuth(tt.err); got != tt.auth {
				t.Errorf("IsAuth = %v, want %v", got, tt.auth)
			}
			if got := IsNotFound(tt.err); got != tt.notFound {
				t.Errorf("IsNotFound = %v, want %v", got, tt.notFound)
			}
		})
	}
}

func TestRetryAfter_ComesFrom429And503Only(t *testing.T) {
	for _, code := range []int{429, 503, 500} {
		srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "12")
			w.WriteHeader(code)
		})
		_, err := newTestClient(t).ListTags(ctx(t), srv.host()+"/org/app", "")
		d, ok := RetryAfter(err)
		if want := code != 500; ok != want || (ok && d != 12*time.Second) {
			t.Errorf("%d: RetryAfter = %v, %v; want 12s, %v", code, d, ok, want)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	tests := map[string]struct{ body, code, message string }{
		"oci":           {`{"errors":[{"code":"DENIED","message":"no\naccess"},{"code":"X"}]}`, "DENIED", "no access"},
		"token service": {`{"error":"invalid_grant","error_description":"bad password"}`, "", "invalid_grant bad password"},
		"docker hub":    {`{"details":"incorrect username or password"}`, "", "incorrect username or password"},
		"plain text":    {"upstream connect error\n", "", "upstream connect error"},
		"html":          {"<html><body>Bad Gateway</body></html>", "", ""},
		"broken json":   {`{"errors":[`, "", ""},
		"empty":         {"", "", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			code, msg := parseErrorBody([]byte(tt.body))
			if code != tt.code || msg != tt.message {
				t.Errorf("parseErrorBody = %q, %q; want %q, %q", code, msg, tt.code, tt.message)
			}
		})
	}
}
