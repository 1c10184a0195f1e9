package receiver

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

// freeAddr returns a loopback address nothing listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// blockingTrigger holds every Trigger call until release is closed.
type blockingTrigger struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingTrigger) Trigger(context.Context, string, string) (int, error) {
	b.entered <- struct{}{}
	<-b.release
	return 1, nil
}

// waitFor polls cond until it holds; the bound only keeps a broken test from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noKeepAlive opens a connection per request, so a request after shutdown cannot reuse one.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func post(url, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+string(testSecret))
	return noKeepAlive.Do(req)
}

func TestServer_RunsOnEveryReplica(t *testing.T) {
	if New(Options{Secret: testSecret}).NeedLeaderElection() {
		t.Fatal("NeedLeaderElection() = true; the receiver records pushes in the API server and must listen on every replica the Service reaches")
	}
}

func TestServer_StartRefusesInvalidOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no secret", Options{Trigger: &fakeTrigger{}}, "refusing to start without a shared secret"},
		{"empty secret", Options{Secret: []byte{}, Trigger: &fakeTrigger{}}, "refusing to start without a shared secret"},
		{"no trigger", Options{Secret: testSecret}, "no Trigger configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Addr = freeAddr(t)
			err := New(tt.opts).Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Start() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestServer_StartFailsWhenTheAddressIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	err = New(Options{Addr: ln.Addr().String(), Secret: testSecret, Trigger: &fakeTrigger{}}).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listening on") {
		t.Fatalf("Start() error = %v, want a listen error", err)
	}
}

// TestServer_ServesUntilContextEndsThenDrains runs the Server the way the manager does and shows
// that cancelling its context stops new connections but lets a delivery in flight finish.
func TestServer_ServesUntilContextEndsThenDrains(t *testing.T) {
	addr := freeAddr(t)
	url := "http://" + addr + "/hook"
	trigger := &blockingTrigger{entered: make(chan struct{}), release: make(chan struct{})}
	srv := New(Options{Addr: addr, Secret: testSecret, Trigger: trigger, Logger: testr.New(t)})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Start(ctx) }()

	waitFor(t, "the receiver listens", func() bool {
		resp, err := noKeepAlive.Get(url)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusMethodNotAllowed
	})

	type result struct {
		status int
		body   string
		err    error
	}
	inFlight := make(chan result, 1)
	go func() {
		resp, err := post(url, genericPush)
		if err != nil {
			inFlight <- result{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		inFlight <- result{status: resp.StatusCode, body: string(b)}
	}()
	<-trigger.entered

	cancel()
	waitFor(t, "the receiver stops accepting connections", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
	select {
	case err := <-stopped:
		t.Fatalf("Start returned (%v) while a request was still in flight", err)
	default:
	}

	close(trigger.release)
	got := <-inFlight
	if got.err != nil {
		t.Fatalf("in-flight request failed: %v", got.err)
	}
	if got.status != http.StatusAccepted || !strings.Contains(got.body, `"triggered":1`) {
		t.Fatalf("in-flight request got %d %q, want 202 with one trigger", got.status, got.body)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Start() = %v, want nil after a graceful shutdown", err)
	}
	if resp, err := post(url, genericPush); err == nil {
		_ = resp.Body.Close()
		t.Fatal("receiver still answers after Start returned")
	}
}
