package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	stdlog "log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func setup(t *testing.T, cfg TracingConfig) {
	t.Helper()
	shutdown, err := SetupTracing(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
}

// TestTracePropagation sends a request from a client span to a server over real HTTP: the server
// continues the trace from the traceparent header, reads the baggage, and its log lines carry the
// trace id; the in-memory exporter shows the server span as the client span's child.
func TestTracePropagation(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	setup(t, TracingConfig{ServiceName: "manager-test", Exporter: exp})

	var logs bytes.Buffer
	log := NewLogger(&logs, slog.LevelInfo, "json")
	var gotTraceparent, gotBaggage string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotTraceparent = r.Header.Get("traceparent")
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		gotBaggage = baggage.FromContext(ctx).Member("tenant").Value()
		ctx, span := Tracer().Start(ctx, SpanClusterConnect, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		log.InfoContext(WithRequestID(ctx, "req-42"), "clusters: Connected")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	member, _ := baggage.NewMember("tenant", "platform")
	bag, _ := baggage.New(member)
	ctx := baggage.ContextWithBaggage(context.Background(), bag)
	ctx, parent := Tracer().Start(ctx, SpanOperatorValidate, trace.WithSpanKind(trace.SpanKindClient))
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	parent.End()

	psc := parent.SpanContext()
	if want := "00-" + psc.TraceID().String() + "-" + psc.SpanID().String() + "-01"; gotTraceparent != want {
		t.Fatalf("traceparent = %q, want %q", gotTraceparent, want)
	}
	if gotBaggage != "platform" {
		t.Fatalf("baggage tenant = %q, want platform", gotBaggage)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2", len(spans))
	}
	child, root := spans[0], spans[1]
	if child.Name != SpanClusterConnect || root.Name != SpanOperatorValidate {
		t.Fatalf("spans %q, %q", child.Name, root.Name)
	}
	if child.Parent.SpanID() != root.SpanContext.SpanID() || child.SpanContext.TraceID() != root.SpanContext.TraceID() {
		t.Fatalf("server span %v is not the child of %v", child.Parent, root.SpanContext)
	}
	if !child.Parent.IsRemote() {
		t.Fatal("the server span's parent came from the header, so it must be remote")
	}
	if child.InstrumentationScope.Name != TracerName {
		t.Fatalf("scope %q", child.InstrumentationScope.Name)
	}
	if v, ok := root.Resource.Set().Value("service.name"); !ok || v.AsString() != "manager-test" {
		t.Fatalf("service.name = %v", v)
	}
	line := decodeLines(t, &logs)[0]
	if line[KeyTraceID] != psc.TraceID().String() || line[KeySpanID] != child.SpanContext.SpanID().String() || line[KeyRequestID] != "req-42" {
		t.Fatalf("log line %v does not carry the server span's ids", line)
	}
}

func TestSpansHaveIDsWithoutExporter(t *testing.T) {
	setup(t, TracingConfig{})
	ctx, span := Tracer().Start(context.Background(), "work")
	defer span.End()
	if !span.SpanContext().IsValid() {
		t.Fatal("span without exporter has no ids")
	}
	var logs bytes.Buffer
	NewLogger(&logs, slog.LevelInfo, "json").InfoContext(ctx, "x")
	if !strings.Contains(logs.String(), span.SpanContext().TraceID().String()) {
		t.Fatalf("log %q lacks the trace id", logs.String())
	}
}

// TestOTLPExporter runs a real OTLP/HTTP receiver and checks the spans arrive at /v1/traces as an
// ExportTraceServiceRequest.
func TestOTLPExporter(t *testing.T) {
	got := make(chan *coltracepb.ExportTraceServiceRequest, 4)
	paths := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type")
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		got <- req
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer srv.Close()

	shutdown, err := SetupTracing(context.Background(), TracingConfig{OTLPEndpoint: srv.URL, ServiceName: "manager-otlp"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := Tracer().Start(context.Background(), SpanOperatorValidate)
	span.End()
	if err := shutdown(context.Background()); err != nil { // flushes the batch
		t.Fatal(err)
	}
	if p := <-paths; p != "POST /v1/traces application/x-protobuf" {
		t.Fatalf("receiver got %q", p)
	}
	req := <-got
	rs := req.GetResourceSpans()
	if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 || len(rs[0].GetScopeSpans()[0].GetSpans()) != 1 {
		t.Fatalf("unexpected export %v", req)
	}
	s := rs[0].GetScopeSpans()[0].GetSpans()[0]
	if s.GetName() != SpanOperatorValidate || !bytes.Equal(s.GetTraceId(), traceIDBytes(span.SpanContext().TraceID())) {
		t.Fatalf("exported span %q trace %x", s.GetName(), s.GetTraceId())
	}
	var service string
	for _, a := range rs[0].GetResource().GetAttributes() {
		if a.GetKey() == "service.name" {
			service = a.GetValue().GetStringValue()
		}
	}
	if service != "manager-otlp" {
		t.Fatalf("service.name = %q", service)
	}
}

func traceIDBytes(id trace.TraceID) []byte { return id[:] }

func TestOTLPEndpointPath(t *testing.T) {
	paths := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	shutdown, err := SetupTracing(context.Background(), TracingConfig{OTLPEndpoint: srv.URL + "/otlp/v1/traces"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := Tracer().Start(context.Background(), "x")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := <-paths; p != "/otlp/v1/traces" {
		t.Fatalf("path %q", p)
	}
}

// TestOTLPHostPortIsHTTPS: a bare host:port speaks TLS. The test server's certificate is not
// trusted, so the export fails on the handshake, which shows the exporter spoke HTTPS.
func TestOTLPHostPortIsHTTPS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
	}))
	srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	exportErrs := make(chan error, 4)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { exportErrs <- err }))
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))

	shutdown, err := SetupTracing(context.Background(), TracingConfig{OTLPEndpoint: strings.TrimPrefix(srv.URL, "https://")})
	if err != nil {
		t.Fatal(err)
	}
	_, span := Tracer().Start(context.Background(), "x")
	span.End()
	_ = shutdown(context.Background())
	err = <-exportErrs
	if !strings.Contains(err.Error(), srv.URL+"/v1/traces") || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("export error %v: want a TLS certificate error from %s/v1/traces", err, srv.URL)
	}
}

func TestSetupTracingRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  TracingConfig
		want string
	}{
		{TracingConfig{OTLPEndpoint: "collector"}, "want host:port (HTTPS) or an http:// or https:// URL"},
		{TracingConfig{OTLPEndpoint: "collector:"}, "want host:port"},
		{TracingConfig{OTLPEndpoint: "grpc://collector:4317"}, "want an http:// or https:// URL"},
		{TracingConfig{OTLPEndpoint: "http://"}, "want an http:// or https:// URL"},
		{TracingConfig{OTLPEndpoint: "https://user:pw@collector:4318"}, "no credentials"},
		{TracingConfig{SampleRatio: 1.5}, "from 0 to 1"},
		{TracingConfig{SampleRatio: -0.1}, "from 0 to 1"},
	} {
		_, err := SetupTracing(context.Background(), tc.cfg)
		if err == nil || !regexp.MustCompile(regexp.QuoteMeta(tc.want)).MatchString(err.Error()) {
			t.Errorf("%+v: err = %v, want it to mention %q", tc.cfg, err, tc.want)
		}
	}
}
