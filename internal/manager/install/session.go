package install

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/slipway-dev/slipway/internal/helmkit"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// FieldManager is the server-side apply field manager of everything the manager applies.
const FieldManager = "slipway-manager"

// session is the clients of one call against one cluster: every request they make is counted
// and carries the trace context of the session's current span.
type session struct {
	config    *rest.Config
	clientset kubernetes.Interface
	dynamic   dynamic.Interface
	getter    *helmkit.Getter
	factory   kube.Factory
	log       *slog.Logger

	requests atomic.Int64
	// span is the span (a spanHolder) requests without one in their context are sent under:
	// Helm and client-go often send requests with context.Background().
	span atomic.Value
}

// newSession builds the clients of one call from the cluster's config, which it does not modify.
func newSession(ctx context.Context, cfg *rest.Config) (*session, error) {
	s := &session{log: slog.Default()}
	s.follow(ctx)
	c := rest.CopyConfig(cfg)
	if c.QPS == 0 {
		// client-go's default (5/s, burst 10) would throttle an install's few hundred requests.
		c.QPS, c.Burst = 50, 100
	}
	// A config from the clusters package is traced already; tracing again sends each request
	// through one span all the same.
	telemetry.TraceKubeRequests(c)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &sessionTransport{s: s, next: rt} })
	s.config = c
	var err error
	if s.clientset, err = kubernetes.NewForConfig(c); err != nil {
		return nil, err
	}
	if s.dynamic, err = dynamic.NewForConfig(c); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	s.getter = helmkit.NewGetter(c, cached, restmapper.NewDeferredDiscoveryRESTMapper(cached))
	s.factory = kube.New(s.getter).Factory
	return s, nil
}

// follow makes ctx's span the parent of the requests sent without a trace context.
func (s *session) follow(ctx context.Context) {
	s.span.Store(spanHolder{trace.SpanFromContext(ctx)})
}

type spanHolder struct{ trace.Span }

// actionConfig is a Helm action configuration for namespace: releases stored as Secrets there,
// Helm's debug messages at slog's debug level.
func (s *session) actionConfig(namespace string) *action.Configuration {
	h := s.log.Handler()
	kc := &kube.Client{Factory: s.factory, Namespace: namespace}
	kc.SetLogger(h)
	secrets := driver.NewSecrets(s.clientset.CoreV1().Secrets(namespace))
	secrets.SetLogger(h)
	ac := action.NewConfiguration(action.ConfigurationSetLogger(h))
	ac.RESTClientGetter = s.getter
	ac.KubeClient = kc
	ac.Releases = storage.Init(secrets)
	ac.Releases.SetLogger(h)
	ac.SetHookOutputFunc(func(_, _, _ string) io.Writer { return io.Discard })
	return ac
}

// sessionTransport counts requests and gives those without a trace context the session's span.
type sessionTransport struct {
	s    *session
	next http.RoundTripper
}

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.s.requests.Add(1)
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		if h, _ := t.s.span.Load().(spanHolder); h.Span != nil && h.SpanContext().IsValid() {
			req = req.WithContext(trace.ContextWithSpan(req.Context(), h.Span))
		}
	}
	return t.next.RoundTrip(req)
}
