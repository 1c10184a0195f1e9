package registrytest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what FaultProxy does with a request instead of (or around) forwarding it.
type Fault int

const (
	// PassThrough forwards the request; a rule with it lets requests through untouched.
	PassThrough Fault = iota
	// ServerError answers 500 with an OCI error body.
	ServerError
	// Hang holds the request without answering until the client gives up or the proxy closes.
	Hang
	// ConnectionReset closes the connection with a TCP reset before answering.
	ConnectionReset
	// TooManyRequests answers 429 with a Retry-After header (Rule.RetryAfter).
	TooManyRequests
	// MalformedJSON answers 200 with a truncated JSON tag list.
	MalformedJSON
	// HugeBody answers 200 and streams Rule.Size bytes of a JSON tag list that never ends.
	HugeBody
)

// String names the fault for test output.
func (f Fault) String() string {
	switch f {
	case PassThrough:
		return "PassThrough"
	case ServerError:
		return "ServerError"
	case Hang:
		return "Hang"
	case ConnectionReset:
		return "ConnectionReset"
	case TooManyRequests:
		return "TooManyRequests"
	case MalformedJSON:
		return "MalformedJSON"
	case HugeBody:
		return "HugeBody"
	}
	return "Fault(" + strconv.Itoa(int(f)) + ")"
}

// DefaultHugeBodySize is what HugeBody streams unless Rule.Size says otherwise.
const DefaultHugeBodySize = 64 << 20

// StatusNoResponse is the status FaultProxy counts for requests it answered with no response
// (Hang, ConnectionReset).
const StatusNoResponse = 0

// Rule applies a Fault to matching requests.
type Rule struct {
	// Fault is what to do.
	Fault Fault
	// Match selects requests; nil selects every registry API request, that is every request
	// under /v2/ except the /v2/ ping itself (and never the token endpoint).
	Match func(*http.Request) bool
	// Times is how many matching requests the rule applies to; 0 means every one until Clear.
	Times int
	// RetryAfter is the Retry-After header of TooManyRequests; empty means "1".
	RetryAfter string
	// Size is how many bytes HugeBody streams; 0 means DefaultHugeBodySize.
	Size int64
}

// IsTagsList matches GET /v2/<name>/tags/list.
func IsTagsList(r *http.Request) bool { return tagsListPath.MatchString(r.URL.Path) }

// IsManifest matches requests for /v2/<name>/manifests/<reference>.
func IsManifest(r *http.Request) bool { return manifestPath.MatchString(r.URL.Path) }

var (
	tagsListPath = regexp.MustCompile(`^/v2/(.+)/tags/list$`)
	manifestPath = regexp.MustCompile(`^/v2/(.+)/manifests/[^/]+$`)
	repoPath     = regexp.MustCompile(`^/v2/(.+)/(?:tags/list|manifests/[^/]+|blobs/.+)$`)
)

// isRegistryAPI is the default match of a Rule.
func isRegistryAPI(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/v2/") && r.URL.Path != "/v2/"
}

// Stats counts what a FaultProxy served.
type Stats struct {
	// ByPath counts requests by URL path (the token endpoint is /token).
	ByPath map[string]int
	// ByStatus counts answers by HTTP status; StatusNoResponse for hangs and resets.
	ByStatus map[int]int
	// Total is the number of requests.
	Total int
}

// ProxyOption configures NewFaultProxy.
type ProxyOption func(*proxyConfig)

type proxyConfig struct {
	tokenAuth                  bool
	tokenUser, tokenPass       string
	upstreamUser, upstreamPass string
	noETag                     bool
}

// WithTokenAuth makes the proxy a token-authenticated registry: requests without a valid Bearer
// token get 401 with `WWW-Authenticate: Bearer realm="<proxy>/token",service="registrytest",
// scope="repository:<name>:pull"`, and /token issues opaque tokens for Basic username and
// password. An empty username issues tokens to anyone, as public registries do.
func WithTokenAuth(username, password string) ProxyOption {
	return func(c *proxyConfig) { c.tokenAuth, c.tokenUser, c.tokenPass = true, username, password }
}

// WithUpstreamAuth makes the proxy send Basic username and password to the upstream registry
// (for a registry started WithBasicAuth behind a token-auth proxy). Without it the client's own
// Authorization is forwarded, unless the proxy does token auth.
func WithUpstreamAuth(username, password string) ProxyOption {
	return func(c *proxyConfig) { c.upstreamUser, c.upstreamPass = username, password }
}

// WithoutETag turns off the ETag the proxy adds to tag lists.
func WithoutETag() ProxyOption {
	return func(c *proxyConfig) { c.noETag = true }
}

// FaultProxy is a reverse proxy in front of a registry that injects faults, adds ETag and
// If-None-Match support to tag lists (computed from the upstream body), can demand a Bearer token
// exchange, and counts requests. Faults apply before authentication, as at a load balancer in
// front of a registry. It is safe for concurrent use.
type FaultProxy struct {
	// URL is http://<Host>.
	URL string
	// Host is the proxy's address, 127.0.0.1:<port>, to use in references instead of the
	// upstream registry's.
	Host string

	cfg      proxyConfig
	upstream *url.URL
	server   *httptest.Server
	forward  *httputil.ReverseProxy
	client   *http.Client
	closing  chan struct{}

	mu     sync.Mutex
	rules  []*Rule
	stats  Stats
	tokens map[string]bool
}

// NewFaultProxy starts a proxy in front of the registry at upstream (host:port or an http URL)
// and closes it when the test ends.
func NewFaultProxy(t testing.TB, upstream string, opts ...ProxyOption) *FaultProxy {
	t.Helper()
	if !strings.Contains(upstream, "://") {
		upstream = "http://" + upstream
	}
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		t.Fatalf("registrytest: bad upstream %q", upstream)
	}
	p := &FaultProxy{
		upstream: u,
		closing:  make(chan struct{}),
		client:   &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		tokens:   map[string]bool{},
	}
	p.resetStatsLocked()
	for _, o := range opts {
		o(&p.cfg)
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // so the registry's Location headers point back at the proxy
			p.setUpstreamAuth(pr.Out.Header)
		},
	}
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.server.URL
	p.Host = strings.TrimPrefix(p.server.URL, "http://")
	t.Cleanup(p.close)
	return p
}

// Repository returns the reference of the repository at path through the proxy.
func (p *FaultProxy) Repository(path string) string { return p.Host + "/" + path }

// Add appends a rule; rules are tried in the order added, and the first that matches a request
// applies.
func (p *FaultProxy) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &r)
}

// Inject applies f to the next times registry API requests (every one when times is 0).
func (p *FaultProxy) Inject(f Fault, times int) { p.Add(Rule{Fault: f, Times: times}) }

// Clear removes every rule.
func (p *FaultProxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Stats returns a copy of the counters.
func (p *FaultProxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{ByPath: map[string]int{}, ByStatus: map[int]int{}, Total: p.stats.Total}
	for k, v := range p.stats.ByPath {
		s.ByPath[k] = v
	}
	for k, v := range p.stats.ByStatus {
		s.ByStatus[k] = v
	}
	return s
}

// Requests returns how many requests were made for path.
func (p *FaultProxy) Requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.ByPath[path]
}

// Responses returns how many answers had status (StatusNoResponse for hangs and resets).
func (p *FaultProxy) Responses(status int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.ByStatus[status]
}

// ResetStats zeroes the counters.
func (p *FaultProxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resetStatsLocked()
}

func (p *FaultProxy) resetStatsLocked() {
	p.stats = Stats{ByPath: map[string]int{}, ByStatus: map[int]int{}}
}

func (p *FaultProxy) close() {
	close(p.closing)
	p.server.CloseClientConnections()
	p.server.Close()
}

// record counts a request's answer.
func (p *FaultProxy) record(path string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Total++
	p.stats.ByPath[path]++
	p.stats.ByStatus[status]++
}

// ruleFor picks the rule for r and uses up one of its times.
func (p *FaultProxy) ruleFor(r *http.Request) (Rule, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.URL.Path == tokenPath {
		return Rule{}, false
	}
	for i, rule := range p.rules {
		match := rule.Match
		if match == nil {
			match = isRegistryAPI
		}
		if !match(r) {
			continue
		}
		applied := *rule
		if rule.Times > 0 {
			rule.Times--
			if rule.Times == 0 {
				p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			}
		}
		return applied, true
	}
	return Rule{}, false
}

// statusWriter remembers the status written.
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

// Unwrap lets http.ResponseController reach the connection for hijacking.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (p *FaultProxy) serve(rw http.ResponseWriter, r *http.Request) {
	w := &statusWriter{ResponseWriter: rw}
	defer func() { p.record(r.URL.Path, w.status) }()

	if rule, ok := p.ruleFor(r); ok && rule.Fault != PassThrough {
		p.fault(w, r, rule)
		return
	}
	if p.cfg.tokenAuth && !p.authorize(w, r) {
		return
	}
	if r.Method == http.MethodGet && IsTagsList(r) && !p.cfg.noETag {
		p.serveTagsList(w, r)
		return
	}
	p.forward.ServeHTTP(w, r)
}

func (p *FaultProxy) fault(w *statusWriter, r *http.Request, rule Rule) {
	switch rule.Fault {
	case ServerError:
		writeJSON(w, http.StatusInternalServerError, `{"errors":[{"code":"UNKNOWN","message":"registrytest: injected server error"}]}`)
	case Hang:
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
	case ConnectionReset:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "registrytest: cannot hijack the connection to reset it: "+err.Error(), http.StatusInternalServerError)
			return
		}
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close with RST instead of FIN
		}
		_ = conn.Close()
	case TooManyRequests:
		retryAfter := rule.RetryAfter
		if retryAfter == "" {
			retryAfter = "1"
		}
		w.Header().Set("Retry-After", retryAfter)
		writeJSON(w, http.StatusTooManyRequests, `{"errors":[{"code":"TOOMANYREQUESTS","message":"registrytest: injected rate limit"}]}`)
	case MalformedJSON:
		writeJSON(w, http.StatusOK, `{"name":"registrytest","tags":["1.0.0",`)
	case HugeBody:
		size := rule.Size
		if size <= 0 {
			size = DefaultHugeBodySize
		}
		streamHugeBody(w, r, size)
	default:
		http.Error(w, fmt.Sprintf("registrytest: unknown fault %v", rule.Fault), http.StatusInternalServerError)
	}
}

// streamHugeBody writes size bytes of an unterminated JSON tag list, stopping early when the
// client goes away.
func streamHugeBody(w http.ResponseWriter, r *http.Request, size int64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	chunk := []byte(strings.Repeat(`"0123456789abcdef",`, 32<<10/19))
	written, _ := io.WriteString(w, `{"name":"registrytest","tags":[`)
	for n := int64(written); n < size; {
		if r.Context().Err() != nil {
			return
		}
		b := chunk
		if rest := size - n; rest < int64(len(b)) {
			b = b[:rest]
		}
		m, err := w.Write(b)
		if err != nil {
			return
		}
		n += int64(m)
	}
}

// serveTagsList forwards a tag list request, adds an ETag computed from the upstream body and
// answers 304 when If-None-Match names it.
func (p *FaultProxy) serveTagsList(w http.ResponseWriter, r *http.Request) {
	out := p.upstream.ResolveReference(&url.URL{Path: r.URL.Path, RawQuery: r.URL.RawQuery})
	req, err := http.NewRequestWithContext(r.Context(), r.Method, out.String(), nil)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, `{"errors":[{"code":"UNKNOWN","message":"registrytest: bad upstream request"}]}`)
		return
	}
	for _, k := range []string{"Accept", "Authorization", "User-Agent"} {
		if v := r.Header.Values(k); len(v) > 0 {
			req.Header[k] = v
		}
	}
	req.Host = r.Host
	p.setUpstreamAuth(req.Header)
	resp, err := p.client.Do(req)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, `{"errors":[{"code":"UNKNOWN","message":"registrytest: upstream unreachable"}]}`)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		writeJSON(w, http.StatusBadGateway, `{"errors":[{"code":"UNKNOWN","message":"registrytest: reading upstream failed"}]}`)
		return
	}
	for k, vs := range resp.Header {
		if k == "Content-Length" || k == "Etag" {
			continue
		}
		w.Header()[k] = vs
	}
	if resp.StatusCode == http.StatusOK {
		sum := sha256.Sum256(body)
		etag := `"sha256:` + hex.EncodeToString(sum[:]) + `"`
		w.Header().Set("ETag", etag)
		if etagMatches(r.Header.Get("If-None-Match"), etag) {
			w.Header().Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, bytes.NewReader(body))
}

// etagMatches implements If-None-Match's weak comparison against one ETag.
func etagMatches(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for _, candidate := range strings.Split(ifNoneMatch, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// setUpstreamAuth replaces the client's Authorization with what the upstream expects.
func (p *FaultProxy) setUpstreamAuth(h http.Header) {
	switch {
	case p.cfg.upstreamUser != "":
		h.Set("Authorization", basicAuth(p.cfg.upstreamUser, p.cfg.upstreamPass))
	case p.cfg.tokenAuth:
		h.Del("Authorization") // the proxy's own token means nothing upstream
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
