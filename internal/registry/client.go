package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// Defaults for the zero values of Options.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxBodyBytes = 4 << 20
	DefaultPageSize     = 1000
	DefaultUserAgent    = "slipway"
)

// maxErrorBodyBytes bounds how much of an error response is read for its message.
const maxErrorBodyBytes = 64 << 10

// Options configure a Client. The zero value talks HTTPS anonymously with the defaults above.
type Options struct {
	// Credentials authenticate to the registry; the zero value is anonymous.
	Credentials Credentials
	// Insecure selects plain HTTP instead of HTTPS. It never relaxes TLS verification, and
	// there is no fallback from one scheme to the other.
	Insecure bool
	// CACert is a PEM bundle of CA certificates trusted in addition to the system roots.
	CACert []byte
	// Timeout bounds each HTTP request, from sending it to reading the whole response body.
	Timeout time.Duration
	// MaxBodyBytes caps every response body the client reads; a larger body is an error.
	MaxBodyBytes int64
	// PageSize is the number of tags asked for per page of a tag list (the n parameter).
	// Negative means never send n and rely on Link headers alone.
	PageSize int
	// UserAgent is sent with every request.
	UserAgent string
	// Transport is the base RoundTripper; nil means a clone of http.DefaultTransport. When it is
	// an *http.Transport it is cloned and CACert is added to its TLS roots.
	Transport http.RoundTripper
}

// Client talks to OCI distribution registries. It is safe for concurrent use; it remembers per
// registry host which authentication the registry asked for, and caches bearer tokens per scope
// until they expire.
type Client struct {
	creds        Credentials
	scheme       string
	timeout      time.Duration
	maxBodyBytes int64
	pageSize     int
	userAgent    string
	httpClient   *http.Client
	limiter      *Limiter
	now          func() time.Time

	mu     sync.Mutex
	hosts  map[string]hostAuth
	tokens map[tokenKey]cachedToken
}

// NewClient returns a Client with opts whose operations each hold a slot of limiter; a nil
// limiter bounds nothing. It fails only when CACert holds no certificate or Transport is a
// RoundTripper that CACert cannot be added to.
func NewClient(opts Options, limiter *Limiter) (*Client, error) {
	transport, err := baseTransport(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{
		creds:        opts.Credentials,
		scheme:       "https",
		timeout:      opts.Timeout,
		maxBodyBytes: opts.MaxBodyBytes,
		pageSize:     opts.PageSize,
		userAgent:    opts.UserAgent,
		limiter:      limiter,
		now:          time.Now,
		hosts:        map[string]hostAuth{},
		tokens:       map[tokenKey]cachedToken{},
	}
	if opts.Insecure {
		c.scheme = "http"
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBodyBytes <= 0 {
		c.maxBodyBytes = DefaultMaxBodyBytes
	}
	if c.pageSize == 0 {
		c.pageSize = DefaultPageSize
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	c.httpClient = &http.Client{
		Transport:     &countingTransport{inner: transport},
		CheckRedirect: checkRedirect,
	}
	return c, nil
}

// baseTransport builds the RoundTripper under the client: TLS always verified, CACert added to
// the system roots.
func baseTransport(opts Options) (http.RoundTripper, error) {
	var t *http.Transport
	switch base := opts.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = base.Clone()
	default:
		if len(opts.CACert) > 0 {
			return nil, errors.New("registry: CACert needs Options.Transport to be nil or an *http.Transport")
		}
		return base, nil
	}
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	}
	t.TLSClientConfig.InsecureSkipVerify = false
	if t.TLSClientConfig.MinVersion < tls.VersionTLS12 {
		t.TLSClientConfig.MinVersion = tls.VersionTLS12
	}
	if len(opts.CACert) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if t.TLSClientConfig.RootCAs != nil {
			pool = t.TLSClientConfig.RootCAs.Clone()
		}
		if !pool.AppendCertsFromPEM(opts.CACert) {
			return nil, errors.New("registry: CACert holds no PEM certificate")
		}
		t.TLSClientConfig.RootCAs = pool
	}
	return t, nil
}

// checkRedirect follows at most five redirects and never from HTTPS down to HTTP. (The standard
// client already drops Authorization when a redirect leaves the host's domain.)
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("refusing redirect from https to %s", req.URL.Scheme)
	}
	return nil
}

// operation is one public call: it holds a limiter slot and counts the HTTP requests it makes.
type operation struct {
	ctx      context.Context
	op       string
	repo     name.Repository
	requests int
	mu       sync.Mutex
}

func (o *operation) count() {
	o.mu.Lock()
	o.requests++
	o.mu.Unlock()
}

func (o *operation) requestCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests
}

// errorf returns an *Error about o.
func (o *operation) errorf(status int, err error, format string, args ...any) *Error {
	return &Error{Op: o.op, Repository: o.repo.Name(), StatusCode: status, Message: fmt.Sprintf(format, args...), Err: err}
}

type operationKey struct{}

// countingTransport counts each round trip (redirects included) against the operation in the
// request's context.
type countingTransport struct{ inner http.RoundTripper }

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if o, ok := req.Context().Value(operationKey{}).(*operation); ok {
		o.count()
	}
	return t.inner.RoundTrip(req)
}

// begin takes a limiter slot for an operation on repo; the caller must call end.
func (c *Client) begin(ctx context.Context, op string, repo name.Repository) (*operation, error) {
	o := &operation{op: op, repo: repo}
	if err := c.limiter.Acquire(ctx); err != nil {
		return nil, o.errorf(0, err, "not started")
	}
	o.ctx = context.WithValue(ctx, operationKey{}, o)
	return o, nil
}

func (c *Client) end(*operation) { c.limiter.Release() }

// baseURL is scheme://host/v2/<repository path>.
func (c *Client) baseURL(repo name.Repository) string {
	return c.scheme + "://" + repo.RegistryStr() + "/v2/" + repo.RepositoryStr()
}

// roundTrip sends one request with the client's timeout. The response body, when there is one,
// must be closed; closing it also releases the timeout.
func (c *Client) roundTrip(o *operation, method, url string, header http.Header) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(o.ctx, c.timeout)
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		cancel()
		return nil, o.errorf(0, err, "building request")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.httpClient.Do(req)
	if err != nil {
		cancel()
		return nil, c.transportError(o, ctx, method+" request", err)
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, ctx: ctx, cancel: cancel}
	return resp, nil
}

// transportError wraps a failure of what (e.g. "GET request") without a complete response,
// telling the caller's cancellation from the client's own timeout.
func (c *Client) transportError(o *operation, reqCtx context.Context, what string, err error) *Error {
	switch {
	case o.ctx.Err() != nil:
		return o.errorf(0, o.ctx.Err(), "%s abandoned", what)
	case errors.Is(reqCtx.Err(), context.DeadlineExceeded):
		return o.errorf(0, context.DeadlineExceeded, "%s: no complete response within %s", what, c.timeout)
	}
	return o.errorf(0, err, "%s failed", what)
}

type cancelOnClose struct {
	io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// errBodyTooLarge marks a response body over the client's limit.
var errBodyTooLarge = errors.New("response body too large")

// readBody reads and closes resp.Body, failing once it exceeds limit bytes.
func (c *Client) readBody(o *operation, resp *http.Response, limit int64) ([]byte, error) {
	defer func() { _ = resp.Body.Close() }()
	if resp.ContentLength > limit {
		return nil, o.errorf(0, errBodyTooLarge, "response of %d bytes exceeds the limit of %d bytes", resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		reqCtx := o.ctx
		if b, ok := resp.Body.(*cancelOnClose); ok {
			reqCtx = b.ctx
		}
		return nil, c.transportError(o, reqCtx, "reading the response body", err)
	}
	if int64(len(body)) > limit {
		return nil, o.errorf(0, errBodyTooLarge, "response exceeds the limit of %d bytes", limit)
	}
	return body, nil
}

// responseError turns a failed response into an *Error with the registry's error code and
// message and any Retry-After hint, and closes the body.
func (c *Client) responseError(o *operation, resp *http.Response) *Error {
	defer func() { _ = resp.Body.Close() }()
	e := o.errorf(resp.StatusCode, nil, "")
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
	}
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		return e
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	if err != nil {
		return e
	}
	e.Code, e.Message = parseErrorBody(body)
	return e
}

// sanitize keeps a server-provided message printable and short.
func sanitize(s string) string {
	const maxLen = 256
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return strings.ToValidUTF8(s, "")
}
