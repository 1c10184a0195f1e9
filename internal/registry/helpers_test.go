package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer is an httptest server that records the requests it saw.
type testServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newTestServer(t *testing.T, h http.HandlerFunc) *testServer {
	t.Helper()
	s := &testServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Clone(context.Background()))
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// host is the server's host:port.
func (s *testServer) host() string { return strings.TrimPrefix(s.URL, "http://") }

// seen returns the requests so far.
func (s *testServer) seen() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.requests...)
}

// newTestClient returns a plain-HTTP client with opts applied over short test defaults.
func newTestClient(t *testing.T, opts ...func(*Options)) *Client {
	t.Helper()
	o := Options{Insecure: true, Timeout: 5 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	c, err := NewClient(o, nil)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func withCredentials(creds Credentials) func(*Options) {
	return func(o *Options) { o.Credentials = creds }
}

func withPageSize(n int) func(*Options) {
	return func(o *Options) { o.PageSize = n }
}

func withMaxBody(n int64) func(*Options) {
	return func(o *Options) { o.MaxBodyBytes = n }
}

func withTimeout(d time.Duration) func(*Options) {
	return func(o *Options) { o.Timeout = d }
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	c, cancel := context.WithCancel(ctx(t))
	t.Cleanup(cancel)
	return c, cancel
}
