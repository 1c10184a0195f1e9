package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var testSecret = []byte("s3cr3t-shared-between-registry-and-slipway")

// fakeTrigger records the tag pushes it receives and marks a fixed number of bundles per
// repository; for a repository in fails it marks them and then fails, as when one bundle's patch
// does not go through.
type fakeTrigger struct {
	mu      sync.Mutex
	matches map[string]int
	fails   map[string]error
	calls   []pushEvent
	loggers int // calls whose context carried a logger
}

func (f *fakeTrigger) Trigger(ctx context.Context, repository, tag string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, pushEvent{repository: repository, tag: tag})
	if _, err := logr.FromContext(ctx); err == nil {
		f.loggers++
	}
	return f.matches[repository], f.fails[repository]
}

func (f *fakeTrigger) got() []pushEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]pushEvent(nil), f.calls...)
}

// request builds a hook request; options adjust it.
func request(path, body string, opts ...func(*http.Request)) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	for _, o := range opts {
		o(r)
	}
	return r
}

func withHeader(key, value string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set(key, value) }
}

func withBearer(secret []byte) func(*http.Request) {
	return withHeader("Authorization", "Bearer "+string(secret))
}

func withMethod(method string) func(*http.Request) {
	return func(r *http.Request) { r.Method = method }
}

// serve runs one request through a new Server's handler.
func serve(t testing.TB, opts Options, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	if opts.Secret == nil {
		opts.Secret = testSecret
	}
	if opts.Trigger == nil {
		opts.Trigger = &fakeTrigger{}
	}
	rec := httptest.NewRecorder()
	New(opts).Handler().ServeHTTP(rec, r)
	return rec
}

func decodeSummary(t *testing.T, rec *httptest.ResponseRecorder) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatalf("response %q is not a summary: %v", rec.Body.String(), err)
	}
	return s
}

func TestHandler_Authentication(t *testing.T) {
	body := genericPush
	tests := []struct {
		name   string
		secret []byte
		opts   []func(*http.Request)
		want   int
	}{
		{name: "bearer", opts: []func(*http.Request){withBearer(testSecret)}, want: http.StatusAccepted},
		{name: "bearer scheme in lower case", opts: []func(*http.Request){withHeader("Authorization", "bearer "+string(testSecret))}, want: http.StatusAccepted},
		{name: "verbatim secret as Harbor sends it", opts: []func(*http.Request){withHeader("Authorization", string(testSecret))}, want: http.StatusAccepted},
		{name: "signature", opts: []func(*http.Request){withHeader(SignatureHeader, Sign(testSecret, []byte(body)))}, want: http.StatusAccepted},
		{name: "signature with upper-case hex", opts: []func(*http.Request){withHeader(SignatureHeader, "sha256="+strings.ToUpper(strings.TrimPrefix(Sign(testSecret, []byte(body)), "sha256=")))}, want: http.StatusAccepted},
		{name: "wrong bearer but good signature", opts: []func(*http.Request){withBearer([]byte("nope")), withHeader(SignatureHeader, Sign(testSecret, []byte(body)))}, want: http.StatusAccepted},
		{name: "no credentials", want: http.StatusUnauthorized},
		{name: "wrong bearer", opts: []func(*http.Request){withBearer([]byte("s3cr3t"))}, want: http.StatusUnauthorized},
		{name: "secret with a suffix", opts: []func(*http.Request){withBearer(append(append([]byte(nil), testSecret...), 'x'))}, want: http.StatusUnauthorized},
		{name: "basic scheme", opts: []func(*http.Request){withHeader("Authorization", "Basic "+string(testSecret))}, want: http.StatusUnauthorized},
		{name: "empty bearer", opts: []func(*http.Request){withHeader("Authorization", "Bearer ")}, want: http.StatusUnauthorized},
		{name: "signature under another secret", opts: []func(*http.Request){withHeader(SignatureHeader, Sign([]byte("other"), []byte(body)))}, want: http.StatusUnauthorized},
		{name: "signature of another body", opts: []func(*http.Request){withHeader(SignatureHeader, Sign(testSecret, []byte(body+" ")))}, want: http.StatusUnauthorized},
		{name: "signature without prefix", opts: []func(*http.Request){withHeader(SignatureHeader, strings.TrimPrefix(Sign(testSecret, []byte(body)), "sha256="))}, want: http.StatusUnauthorized},
		{name: "signature not hex", opts: []func(*http.Request){withHeader(SignatureHeader, "sha256=zz")}, want: http.StatusUnauthorized},
		{name: "server without a secret rejects an empty bearer", secret: []byte{}, opts: []func(*http.Request){withHeader("Authorization", "Bearer ")}, want: http.StatusUnauthorized},
		{name: "server without a secret rejects an empty-key signature", secret: []byte{}, opts: []func(*http.Request){withHeader(SignatureHeader, Sign(nil, []byte(body)))}, want: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trigger := &fakeTrigger{}
			rec := serve(t, Options{Secret: tt.secret, Trigger: trigger}, request("/hook", body, tt.opts...))
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d (body %q)", rec.Code, tt.want, rec.Body.String())
			}
			if rec.Code == http.StatusUnauthorized {
				if got := rec.Header().Get("WWW-Authenticate"); got == "" {
					t.Error("401 without WWW-Authenticate")
				}
				if n := len(trigger.got()); n != 0 {
					t.Errorf("unauthenticated request triggered %d times", n)
				}
			}
		})
	}
}

func TestHandler_Formats(t *testing.T) {
	trigger := func() *fakeTrigger {
		return &fakeTrigger{matches: map[string]int{
			"registry.example.com:5000/org/bundle": 2,
			"harbor.example.com/project/repo":      1,
			"ghcr.io/org/bundle":                   1,
			"127.0.0.1:5001/demo/app":              3,
		}}
	}
	tests := []struct {
		name        string
		path        string
		body        string
		opts        []func(*http.Request)
		want        summary
		wantTrigger []pushEvent
	}{
		{
			name:        "distribution",
			path:        "/hook",
			body:        distributionPush,
			opts:        []func(*http.Request){withHeader("Content-Type", distributionEventsV1)},
			want:        summary{Events: 1, Triggered: 2},
			wantTrigger: []pushEvent{{"registry.example.com:5000/org/bundle", "1.2.3"}},
		},
		{
			name:        "distribution route, mixed events",
			path:        "/hook/distribution",
			body:        distributionMixed,
			opts:        []func(*http.Request){withHeader("Content-Type", distributionEventsV1)},
			want:        summary{Events: 1, Triggered: 3},
			wantTrigger: []pushEvent{{"127.0.0.1:5001/demo/app", "0.2.0"}},
		},
		{
			name:        "harbor default",
			path:        "/hook/harbor",
			body:        harborPush,
			opts:        []func(*http.Request){withHeader("Content-Type", "application/json")},
			want:        summary{Events: 1, Triggered: 1},
			wantTrigger: []pushEvent{{"harbor.example.com/project/repo", "1.2.3"}},
		},
		{
			name:        "harbor cloudevents binary mode",
			path:        "/hook",
			body:        harborBinaryData,
			opts:        []func(*http.Request){withHeader("Content-Type", "application/json"), withHeader("Ce-Type", harborPushCloudEvents)},
			want:        summary{Events: 1, Triggered: 1},
			wantTrigger: []pushEvent{{"harbor.example.com/project/repo", "3.1.0"}},
		},
		{
			name:        "harbor cloudevents structured, repository nobody watches",
			path:        "/hook",
			body:        harborCloudEvent,
			want:        summary{Events: 2, Triggered: 0},
			wantTrigger: []pushEvent{{"harbor.example.com:8443/project/repo", "2.0.0"}, {"harbor.example.com:8443/project/repo", "stable"}},
		},
		{
			name: "harbor pull is accepted without triggering",
			path: "/hook",
			body: harborPull,
			want: summary{},
		},
		{
			name:        "generic",
			path:        "/hook",
			body:        genericPush,
			want:        summary{Events: 1, Triggered: 1},
			wantTrigger: []pushEvent{{"ghcr.io/org/bundle", "1.2.3"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trigger()
			opts := append([]func(*http.Request){withBearer(testSecret)}, tt.opts...)
			rec := serve(t, Options{Trigger: tr, Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1})}, request(tt.path, tt.body, opts...))
			if rec.Code != http.StatusAccepted {
				t.Fatalf("status = %d, want 202 (body %q)", rec.Code, rec.Body.String())
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if got := decodeSummary(t, rec); got != tt.want {
				t.Errorf("summary = %+v, want %+v", got, tt.want)
			}
			got := tr.got()
			if len(got) != len(tt.wantTrigger) {
				t.Fatalf("Trigger calls = %+v, want %+v", got, tt.wantTrigger)
			}
			for i := range got {
				if got[i] != tt.wantTrigger[i] {
					t.Errorf("Trigger call %d = %+v, want %+v", i, got[i], tt.wantTrigger[i])
				}
			}
			if tr.loggers != len(got) {
				t.Errorf("%d of %d Trigger calls had a logger in their context", tr.loggers, len(got))
			}
		})
	}
}

func TestHandler_Rejections(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		req       *http.Request
		want      int
		wantError string
	}{
		{
			name:      "GET is not allowed",
			req:       request("/hook", "", withMethod(http.MethodGet), withBearer(testSecret)),
			want:      http.StatusMethodNotAllowed,
			wantError: "only POST is allowed",
		},
		{
			name:      "PUT is not allowed even unauthenticated",
			req:       request("/hook/harbor", genericPush, withMethod(http.MethodPut)),
			want:      http.StatusMethodNotAllowed,
			wantError: "only POST is allowed",
		},
		{
			name:      "malformed JSON",
			req:       request("/hook", `{"repository":`, withBearer(testSecret)),
			want:      http.StatusBadRequest,
			wantError: "malformed JSON: unexpected end of input",
		},
		{
			name:      "unknown format",
			req:       request("/hook", `{"ref":"refs/heads/main"}`, withBearer(testSecret)),
			want:      http.StatusBadRequest,
			wantError: "unknown payload format",
		},
		{
			name:      "wrong format for the route",
			req:       request("/hook/harbor", genericPush, withBearer(testSecret)),
			want:      http.StatusBadRequest,
			wantError: "payload is not a harbor notification",
		},
		{
			name:      "body over the default limit",
			req:       request("/hook", `{"repository":"ghcr.io/org/bundle","tag":"1","pad":"`+strings.Repeat("x", int(DefaultMaxBodyBytes))+`"}`, withBearer(testSecret)),
			want:      http.StatusRequestEntityTooLarge,
			wantError: "body exceeds 1048576 bytes",
		},
		{
			name:      "body over a configured limit",
			opts:      Options{MaxBodyBytes: 64},
			req:       request("/hook", distributionPush, withBearer(testSecret)),
			want:      http.StatusRequestEntityTooLarge,
			wantError: "body exceeds 64 bytes",
		},
		{
			name:      "signed body over the limit is rejected before its signature is checked",
			opts:      Options{MaxBodyBytes: 64},
			req:       request("/hook", distributionPush, withHeader(SignatureHeader, "sha256=00")),
			want:      http.StatusRequestEntityTooLarge,
			wantError: "body exceeds 64 bytes",
		},
		{
			name: "unknown path",
			req:  request("/hooks", genericPush, withBearer(testSecret)),
			want: http.StatusNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trigger := &fakeTrigger{}
			tt.opts.Trigger = trigger
			rec := serve(t, tt.opts, tt.req)
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d (body %q)", rec.Code, tt.want, rec.Body.String())
			}
			if tt.want == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != http.MethodPost {
				t.Errorf("Allow = %q, want POST", rec.Header().Get("Allow"))
			}
			if tt.wantError != "" {
				var body struct{ Error string }
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !strings.Contains(body.Error, tt.wantError) {
					t.Errorf("body = %q, want an error containing %q", rec.Body.String(), tt.wantError)
				}
			}
			if n := len(trigger.got()); n != 0 {
				t.Errorf("rejected request triggered %d times", n)
			}
		})
	}
}

func TestHandler_BodyAtTheLimitIsAccepted(t *testing.T) {
	body := genericPush
	rec := serve(t, Options{MaxBodyBytes: int64(len(body))}, request("/hook", body, withBearer(testSecret)))
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status = %d, want 202 (body %q)", rec.Code, rec.Body.String())
	}
}

func TestHandler_NeverLogsCredentials(t *testing.T) {
	var logs bytes.Buffer
	log := funcr.New(func(prefix, args string) { logs.WriteString(prefix + args + "\n") }, funcr.Options{Verbosity: 10})
	reqs := []*http.Request{
		request("/hook", genericPush, withBearer(testSecret)),
		request("/hook", `{"repository":`, withBearer(testSecret)),
		request("/hook", genericPush, withBearer([]byte("guess-"+string(testSecret[:8])))),
		request("/hook", genericPush, withHeader(SignatureHeader, Sign(testSecret, []byte(genericPush)))),
		request("/hook", genericPush, withHeader(SignatureHeader, "sha256=0badc0de")),
		request("/hook", genericPush, withMethod(http.MethodGet), withBearer(testSecret)),
	}
	for _, r := range reqs {
		serve(t, Options{Logger: log}, r)
	}
	out := logs.String()
	if out == "" {
		t.Fatal("nothing was logged")
	}
	sig := strings.TrimPrefix(Sign(testSecret, []byte(genericPush)), "sha256=")
	for _, leak := range []string{string(testSecret), string(testSecret[:8]), sig, "0badc0de", "Authorization", "Bearer"} {
		if strings.Contains(out, leak) {
			t.Errorf("log contains %q:\n%s", leak, out)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestHandler_Metrics(t *testing.T) {
	trigger := &fakeTrigger{matches: map[string]int{"registry.example.com:5000/org/bundle": 2}}
	before := map[string]float64{}
	for _, r := range []string{resultAccepted, resultUnauthorized, resultBadRequest, resultTooLarge, resultMethodNotAllowed} {
		before[r] = counterValue(t, webhookRequests.WithLabelValues(r))
	}
	triggersBefore := counterValue(t, webhookTriggers)

	s := New(Options{Secret: testSecret, Trigger: trigger, MaxBodyBytes: 4096})
	for _, r := range []*http.Request{
		request("/hook", distributionPush, withBearer(testSecret)),
		request("/hook", distributionPush, withBearer(testSecret)),
		request("/hook", distributionPush),
		request("/hook", "{", withBearer(testSecret)),
		request("/hook", strings.Repeat(" ", 5000)+"{}", withBearer(testSecret)),
		request("/hook", "", withMethod(http.MethodDelete)),
	} {
		s.Handler().ServeHTTP(httptest.NewRecorder(), r)
	}
	// A second Server registers nothing twice.
	New(Options{Secret: testSecret, Trigger: trigger})

	want := map[string]float64{resultAccepted: 2, resultUnauthorized: 1, resultBadRequest: 1, resultTooLarge: 1, resultMethodNotAllowed: 1}
	for r, n := range want {
		if got := counterValue(t, webhookRequests.WithLabelValues(r)) - before[r]; got != n {
			t.Errorf("requests_total{result=%q} grew by %v, want %v", r, got, n)
		}
	}
	if got := counterValue(t, webhookTriggers) - triggersBefore; got != 4 {
		t.Errorf("triggers_total grew by %v, want 4", got)
	}
}

// BenchmarkHandle measures one distribution push notification through the handler: bearer
// authentication, body read, format detection, parsing, Trigger and the JSON response.
func BenchmarkHandle(b *testing.B) {
	trigger := &benchTrigger{}
	h := New(Options{Secret: testSecret, Trigger: trigger}).Handler()
	body := []byte(distributionPush)
	auth := "Bearer " + string(testSecret)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
		r.Header.Set("Content-Type", distributionEventsV1)
		r.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusAccepted {
			b.Fatalf("status = %d: %s", rec.Code, rec.Body.String())
		}
	}
	if trigger.n == 0 {
		b.Fatal("Trigger was never called")
	}
}

type benchTrigger struct{ n int }

func (t *benchTrigger) Trigger(context.Context, string, string) (int, error) { t.n++; return 1, nil }

func TestHandler_WithoutTriggerAcceptsAndTriggersNothing(t *testing.T) {
	rec := httptest.NewRecorder()
	New(Options{Secret: testSecret}).Handler().ServeHTTP(rec, request("/hook", genericPush, withBearer(testSecret)))
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status = %d, want 202 (body %q)", rec.Code, rec.Body.String())
	}
	if got := decodeSummary(t, rec); got != (summary{Events: 1}) {
		t.Fatalf("summary = %+v, want one event and no triggers", got)
	}
}

// TestHandler_FailedTriggerAsksForARetry: when a push cannot be recorded on every bundle, the
// delivery is not acknowledged: 503 with Retry-After, the count of bundles marked and why, and
// requests_total{result="failed"}.
func TestHandler_FailedTriggerAsksForARetry(t *testing.T) {
	repo := "ghcr.io/org/bundle"
	trigger := &fakeTrigger{matches: map[string]int{repo: 1},
		fails: map[string]error{repo: errors.New("marking WerfBundle team/app: the server is currently unable to handle the request")}}
	failedBefore := counterValue(t, webhookRequests.WithLabelValues(resultFailed))
	acceptedBefore := counterValue(t, webhookRequests.WithLabelValues(resultAccepted))

	rec := serve(t, Options{Trigger: trigger, Logger: testr.New(t)}, request("/hook", genericPush, withBearer(testSecret)))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status = %d, want 503 (body %q)", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("no Retry-After header")
	}
	got := decodeSummary(t, rec)
	if got.Events != 1 || got.Triggered != 1 || !strings.Contains(got.Error, "retry the delivery") {
		t.Errorf("summary = %+v, want 1 event, 1 bundle marked and an error asking for a retry", got)
	}
	if strings.Contains(got.Error, "team/app") {
		t.Errorf("error %q tells the sender about bundles; it should only say to retry", got.Error)
	}
	if d := counterValue(t, webhookRequests.WithLabelValues(resultFailed)) - failedBefore; d != 1 {
		t.Errorf("requests_total{result=failed} grew by %v, want 1", d)
	}
	if d := counterValue(t, webhookRequests.WithLabelValues(resultAccepted)) - acceptedBefore; d != 0 {
		t.Errorf("requests_total{result=accepted} grew by %v, want 0", d)
	}
}
