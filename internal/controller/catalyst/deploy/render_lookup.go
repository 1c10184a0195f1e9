package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// A chart's `lookup` reads objects while its templates render. The renderer holds no credential
// and may open no connection (render_sandbox.go); it sends its requests, HTTP/1.1 on one
// connection, over a socket it inherits as fd 3. The operator answers them here: GET only,
// discovery and the objects of the environment's own namespace only, each forwarded as the
// environment's deployer (the Engine's identity for the deploy) with a time and a size limit.
// Everything else gets a 403 whose message the template's error, and so RenderFailed, carries.

// lookupFD is the renderer's end of the socket.
const lookupFD = 3

// lookupProxy answers the lookups of a rendering into namespace, as e's identity.
func (e *Engine) lookupProxy(namespace string) (http.Handler, error) {
	base, _, err := rest.DefaultServerUrlFor(e.config)
	if err != nil {
		return nil, fmt.Errorf("the API server's address: %w", err)
	}
	hc, err := rest.HTTPClientFor(e.config)
	if err != nil {
		return nil, err
	}
	return &lookupProxy{namespace: namespace, base: base, client: hc,
		timeout: e.opts.Render.LookupTimeout, maxBytes: e.opts.Render.LookupMaxBytes}, nil
}

type lookupProxy struct {
	namespace string
	base      *url.URL
	client    *http.Client
	timeout   time.Duration
	maxBytes  int64
}

// lookupQuery are the query parameters a get or a list may carry; watch and the rest are refused.
var lookupQuery = map[string]bool{"labelSelector": true, "fieldSelector": true, "limit": true, "continue": true,
	"resourceVersion": true, "resourceVersionMatch": true, "timeout": true}

func (p *lookupProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	what := r.Method + " " + r.URL.Path
	if err := p.allowed(r); err != nil {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
			fmt.Sprintf("lookup refused: %s: %s", what, err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	target := p.base.JoinPath(r.URL.Path)
	target.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "lookup refused: "+what+": "+err.Error())
		return
	}
	// Only Accept: the renderer's other headers (an Impersonate-User, say) never reach the server.
	if a := r.Header.Get("Accept"); a != "" {
		out.Header.Set("Accept", a)
	}
	body, resp, err := p.read(out)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		writeStatus(w, http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
			fmt.Sprintf("lookup %s took longer than %s (the lookup timeout)", what, p.timeout))
	case errors.Is(err, errLookupTooLarge):
		writeStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
			fmt.Sprintf("the answer to lookup %s is larger than %d bytes (the lookup size limit)", what, p.maxBytes))
	case err != nil:
		writeStatus(w, http.StatusBadGateway, metav1.StatusReasonServiceUnavailable, fmt.Sprintf("lookup %s: %v", what, err))
	default:
		if ct := resp.Header.Get("Content-Type"); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	}
}

var errLookupTooLarge = errors.New("lookup answer too large")

// read makes the request and reads the answer whole, at most p.maxBytes of it.
func (p *lookupProxy) read(req *http.Request) ([]byte, *http.Response, error) {
	resp, err := p.client.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, nil, req.Context().Err()
		}
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBytes+1))
	if err != nil {
		if req.Context().Err() != nil {
			return nil, nil, req.Context().Err()
		}
		return nil, nil, err
	}
	if int64(len(body)) > p.maxBytes {
		return nil, nil, errLookupTooLarge
	}
	return body, resp, nil
}

// allowed says why a request of the renderer is refused, or nil: a GET of discovery (/api,
// /apis and their group versions) or of objects of the environment's namespace, one kind or one
// object, no subresource.
func (p *lookupProxy) allowed(r *http.Request) error {
	if r.Method != http.MethodGet {
		return errors.New("a lookup only reads")
	}
	for k := range r.URL.Query() {
		if !lookupQuery[k] {
			return fmt.Errorf("query parameter %q is not allowed", k)
		}
	}
	if r.URL.RawPath != "" {
		return errors.New("an escaped path is not allowed")
	}
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return errors.New("not a path of the API")
		}
	}
	var rest []string
	switch {
	case segs[0] == "api" && len(segs) <= 2, segs[0] == "apis" && len(segs) <= 3:
		return nil // discovery
	case segs[0] == "api":
		rest = segs[2:]
	case segs[0] == "apis":
		rest = segs[3:]
	default:
		return errors.New("not a path of the API")
	}
	if len(rest) < 3 || rest[0] != "namespaces" {
		return fmt.Errorf("cluster-scoped objects and objects of every namespace are not readable; a chart may look up objects of its own namespace %s only", p.namespace)
	}
	if rest[1] != p.namespace {
		return fmt.Errorf("namespace %s is not the environment's; a chart may look up objects of its own namespace %s only", rest[1], p.namespace)
	}
	if len(rest) > 4 {
		return errors.New("subresources are not readable")
	}
	return nil
}

// writeStatus answers with an API Status, which client-go turns into an error with msg.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: msg}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

// serveOverSocket serves h over one end of a new socket pair and returns the other end, for the
// renderer to inherit. stop ends the serving and closes both ends.
func serveOverSocket(h http.Handler) (child *os.File, stop func(), err error) {
	fds, err := socketpair()
	if err != nil {
		return nil, nil, fmt.Errorf("a socket for the renderer's lookups: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "lookups"), os.NewFile(uintptr(fds[1]), "lookups (renderer)")
	conn, err := net.FileConn(parent)
	_ = parent.Close()
	if err != nil {
		_ = child.Close()
		return nil, nil, fmt.Errorf("a socket for the renderer's lookups: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(&oneConnListener{conn: conn, closed: make(chan struct{})})
	}()
	return child, func() {
		_ = srv.Close()
		<-done
		_ = conn.Close()
		_ = child.Close()
	}, nil
}

// oneConnListener accepts conn once, then waits until it is closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	closed chan struct{}
	close  sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.conn })
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.close.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// lookupConfig is the renderer's client configuration: every request over the inherited socket,
// on its one connection. The address is a placeholder; the operator's proxy decides the rest.
func lookupConfig() *rest.Config {
	var mu sync.Mutex
	dialed := false
	dial := func(context.Context, string, string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if dialed {
			return nil, errors.New("the connection to the operator for lookups is closed")
		}
		dialed = true
		return net.FileConn(os.NewFile(lookupFD, "lookups"))
	}
	return &rest.Config{Host: "http://slipway-operator", QPS: 20, Burst: 40,
		Transport: &http.Transport{DialContext: dial, MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}}
}
