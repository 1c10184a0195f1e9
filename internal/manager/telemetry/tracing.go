package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the manager's spans.
const TracerName = "slipway/manager"

// The design's span names where the manager runs them.
const (
	SpanOperatorValidate = "operator.validate"
	SpanClusterConnect   = "cluster.connect"
)

// TracingConfig configures SetupTracing.
type TracingConfig struct {
	// OTLPEndpoint is the base URL of an OTLP/HTTP receiver ("http://collector:4318"); spans go to
	// its /v1/traces unless the URL has another path. A bare host:port means HTTPS. Empty: no
	// exporter; spans still get ids, which the logs carry, and W3C headers still propagate.
	OTLPEndpoint string
	// ServiceName is the service.name resource attribute (default "slipway-manager").
	ServiceName string
	// SampleRatio is the share of new traces sampled, in [0, 1]; 0 means 1 (all). A request that
	// arrives with a sampled traceparent is always sampled (parent-based).
	SampleRatio float64
	// Exporter, when set, also receives every ended span synchronously (tests, another backend).
	Exporter sdktrace.SpanExporter
}

// SetupTracing installs the W3C tracecontext + baggage propagator and a tracer provider as the
// process's globals. The returned shutdown flushes and stops the exporters; call it on exit.
func SetupTracing(ctx context.Context, cfg TracingConfig) (shutdown func(context.Context) error, err error) {
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return nil, fmt.Errorf("trace sample ratio %v: want a number from 0 to 1", cfg.SampleRatio)
	}
	ratio := cfg.SampleRatio
	if ratio == 0 {
		ratio = 1
	}
	name := cfg.ServiceName
	if name == "" {
		name = "slipway-manager"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", name)))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	}
	if cfg.OTLPEndpoint != "" {
		exp, err := newOTLPExporter(ctx, cfg.OTLPEndpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if cfg.Exporter != nil {
		opts = append(opts, sdktrace.WithSyncer(cfg.Exporter))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, nil
}

func newOTLPExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	if !strings.Contains(endpoint, "://") {
		// host:port, as the exporter's own WithEndpoint takes it: HTTPS.
		if _, port, err := net.SplitHostPort(endpoint); err != nil || port == "" {
			return nil, fmt.Errorf("OTLP endpoint %q: want host:port (HTTPS) or an http:// or https:// URL such as http://collector:4318", endpoint)
		}
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL such as http://collector:4318", endpoint)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("OTLP endpoint: put no credentials, query or fragment in the URL")
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithTimeout(10 * time.Second)}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	if u.Path != "" && u.Path != "/" {
		opts = append(opts, otlptracehttp.WithURLPath(u.Path))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter for %s: %w", endpoint, err)
	}
	return exp, nil
}

// Tracer is the manager's tracer, from the global provider SetupTracing installs.
func Tracer() trace.Tracer { return otel.Tracer(TracerName) }
