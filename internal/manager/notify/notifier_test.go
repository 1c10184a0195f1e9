package notify

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/notify/smtptest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var testPending = Pending{
	ApprovalID: "ap-7", DeploymentID: "dep-3", Kind: "production", RequiredRole: "EnvironmentOwner:Production",
	Required: 1, Reason: "widgets 2.0.0 to the Production clusters prod-1", Operator: "widgets", Version: "2.0.0",
	Strategy: "Rolling", Clusters: []string{"dev-1", "prod-1"}, RequestedBy: "otto",
	ExpiresAt: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC),
}

// bundle is a Notifier over a real SMTP server, with its results and backoff waits recorded.
type bundle struct {
	n       *Notifier
	results chan Result
	mu      sync.Mutex
	waits   []time.Duration
	onSleep func(n int) // called on the n-th wait (from 1)
	logs    *testenv.SyncBuffer
}

func (b *bundle) sleeps() []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.waits)
}

func newBundle(t *testing.T, sender Sender, change func(*Config)) *bundle {
	t.Helper()
	b := &bundle{results: make(chan Result, 16), logs: &testenv.SyncBuffer{}}
	cfg := Config{
		Sender:  sender,
		BaseURL: "https://slipway.example.com/manager",
		Recipients: map[string][]string{
			"EnvironmentOwner:Production": {"olga@example.com"},
			"Admin":                       {"ada@example.com"},
			"*":                           {"audit@example.com", "olga@example.com"},
		},
		Backoff: Backoff{Initial: time.Second, Max: 4 * time.Second, Attempts: 5},
		Sleep: func(ctx context.Context, d time.Duration) error {
			b.mu.Lock()
			b.waits = append(b.waits, d)
			n := len(b.waits)
			b.mu.Unlock()
			if b.onSleep != nil {
				b.onSleep(n)
			}
			return ctx.Err()
		},
		Now:      func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) },
		Log:      slog.New(slog.NewTextHandler(b.logs, nil)),
		OnResult: func(r Result) { b.results <- r },
	}
	if change != nil {
		change(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.n = n
	t.Cleanup(n.Stop)
	return b
}

func (b *bundle) start(t *testing.T) {
	t.Helper()
	if err := b.n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-b.n.Started()
}

func (b *bundle) result(t *testing.T) Result {
	t.Helper()
	select {
	case r := <-b.results:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no result")
		return Result{}
	}
}

func TestNotifierDelivers(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{})
	b := newBundle(t, mailerFor(t, ts.Addr), nil)
	b.start(t)
	if err := b.n.Enqueue(testPending); err != nil {
		t.Fatal(err)
	}
	r := b.result(t)
	if r.Err != nil || r.Attempts != 1 {
		t.Fatalf("result %+v", r)
	}
	got := receive(t, ts)
	if diff := cmp.Diff([]string{"audit@example.com", "olga@example.com"}, got.To); diff != "" {
		t.Errorf("recipients (-want +got):\n%s", diff)
	}
	for k, want := range map[string]string{
		"Subject":                 "[slipway] Approval needed: widgets 2.0.0 (production) by otto",
		"X-Slipway-Approval-Id":   "ap-7",
		"X-Slipway-Deployment-Id": "dep-3",
		"Date":                    "Mon, 23 Nov 2026 12:00:00 +0000",
		"To":                      "<audit@example.com>, <olga@example.com>",
	} {
		if v := decodeHeader(t, got.Header, k); v != want {
			t.Errorf("%s: %q, want %q", k, v, want)
		}
	}
	for _, want := range []string{
		"otto asked to deploy widgets 2.0.0 (Rolling), and it waits for approval.",
		"Why:          widgets 2.0.0 to the Production clusters prod-1",
		"Who decides:  EnvironmentOwner:Production or Admin",
		"Deployment:   dep-3",
		"Clusters:     dev-1, prod-1",
		"Requested by: otto",
		"Approval:     ap-7 (production)",
		"Expires:      2026-11-24T12:00:00Z",
		"Approve: https://slipway.example.com/manager/api/v1/approvals/ap-7/approve\n",
		"Reject:  https://slipway.example.com/manager/api/v1/approvals/ap-7/reject\n",
		"Details: https://slipway.example.com/manager/api/v1/deployments/dep-3\n",
	} {
		if !strings.Contains(got.Body, want) {
			t.Errorf("the body lacks %q:\n%s", want, got.Body)
		}
	}
}

func TestNotifierRetriesUntilTheServerIsUp(t *testing.T) {
	addr := testenv.FreeAddr(t)
	var up *smtptest.Server
	b := newBundle(t, mailerFor(t, addr), nil)
	b.onSleep = func(n int) {
		if n == 2 { // down for two attempts, then up on the same address
			up = smtptest.Start(t, smtptest.Options{Addr: addr})
		}
	}
	b.start(t)
	if err := b.n.Enqueue(testPending); err != nil {
		t.Fatal(err)
	}
	r := b.result(t)
	if r.Err != nil || r.Attempts != 3 {
		t.Fatalf("result %+v, want delivered at the third attempt", r)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, b.sleeps()); diff != "" {
		t.Errorf("backoff waits (-want +got):\n%s", diff)
	}
	if m := receive(t, up); !strings.Contains(string(m.Data), "ap-7") {
		t.Errorf("message %q", m.Data)
	}
}

func TestNotifierGivesUp(t *testing.T) {
	b := newBundle(t, mailerFor(t, testenv.FreeAddr(t)), nil)
	b.start(t)
	if err := b.n.Enqueue(testPending); err != nil {
		t.Fatal(err)
	}
	r := b.result(t)
	if r.Err == nil || r.Attempts != 5 || Permanent(r.Err) || !strings.Contains(r.Err.Error(), "connect to") {
		t.Fatalf("result %+v, want a connect error after 5 attempts", r)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}, b.sleeps()); diff != "" {
		t.Errorf("backoff waits (-want +got):\n%s", diff)
	}
	if !strings.Contains(b.logs.String(), "notify: Approval mail failed; giving up") {
		t.Errorf("no give-up line in the log:\n%s", b.logs)
	}
}

func TestNotifierPermanentErrorIsNotRetried(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{Password: "other"})
	b := newBundle(t, mailerFor(t, ts.Addr), nil)
	b.start(t)
	if err := b.n.Enqueue(testPending); err != nil {
		t.Fatal(err)
	}
	r := b.result(t)
	if r.Err == nil || r.Attempts != 1 || !Permanent(r.Err) || len(b.sleeps()) != 0 {
		t.Fatalf("result %+v after %v waits, want one attempt refused for good", r, b.sleeps())
	}
}

func TestNotifierNoRecipients(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{})
	b := newBundle(t, mailerFor(t, ts.Addr), func(c *Config) {
		c.Recipients = map[string][]string{"Admin": {"ada@example.com"}}
	})
	b.start(t)
	if err := b.n.Enqueue(testPending); err != nil {
		t.Fatal(err)
	}
	if r := b.result(t); !errors.Is(r.Err, ErrNoRecipients) || r.Attempts != 0 {
		t.Fatalf("result %+v, want ErrNoRecipients without an attempt", r)
	}
}

func TestNotifierQueue(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{})
	b := newBundle(t, mailerFor(t, ts.Addr), func(c *Config) { c.QueueSize = 2 })
	// Not started: the queue fills.
	second := testPending
	second.ApprovalID = "ap-8"
	for _, p := range []Pending{testPending, testPending, second} { // the repeat is queued once
		if err := b.n.Enqueue(p); err != nil {
			t.Fatalf("Enqueue %s: %v", p.ApprovalID, err)
		}
	}
	third := testPending
	third.ApprovalID = "ap-9"
	if err := b.n.Enqueue(third); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Enqueue on a full queue: %v", err)
	}
	// Stopped before it started: both queued approvals are reported dropped.
	b.n.Stop()
	var dropped []string
	for range 2 {
		r := b.result(t)
		if !errors.Is(r.Err, ErrStopped) {
			t.Errorf("result %+v, want ErrStopped", r)
		}
		dropped = append(dropped, r.Pending.ApprovalID)
	}
	if diff := cmp.Diff([]string{"ap-7", "ap-8"}, dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if err := b.n.Enqueue(testPending); !errors.Is(err, ErrStopped) {
		t.Errorf("Enqueue after Stop: %v", err)
	}
	if err := b.n.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Stop: %v", err)
	}
	b.n.Stop() // twice is fine
}

func TestNotifierStartTwice(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{})
	b := newBundle(t, mailerFor(t, ts.Addr), nil)
	b.start(t)
	if err := b.n.Start(context.Background()); err == nil {
		t.Fatal("started twice")
	}
}

func TestNotifierStopAbandonsBackoff(t *testing.T) {
	b := newBundle(t, mailerFor(t, testenv.FreeAddr(t)), func(c *Config) {
		c.Sleep = nil // the real timer
		c.Backoff = Backoff{Initial: time.Hour, Max: time.Hour, Attempts: 3}
	})
	b.start(t)
	if err := b.n.Enqueue(testPending); err != nil {
		t.Fatal(err)
	}
	// The first attempt fails and the worker waits an hour; Stop must end that wait.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.logs.String(), "retrying"); {
		if time.Now().After(deadline) {
			t.Fatalf("the first attempt did not fail:\n%s", b.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.n.Stop()
	if r := b.result(t); !errors.Is(r.Err, ErrStopped) || r.Attempts != 1 {
		t.Fatalf("result %+v, want ErrStopped after one attempt", r)
	}
}

func TestNewChecksConfig(t *testing.T) {
	m := &Mailer{Addr: "127.0.0.1:1", From: "a@example.com"}
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Sender: m, BaseURL: "slipway.example.com"}, "notify.baseURL"},
		{Config{Sender: m, BaseURL: "ftp://slipway.example.com"}, "notify.baseURL"},
		{Config{Sender: m, BaseURL: "https://s.example.com", Recipients: map[string][]string{"Admin": {"ada"}}}, "notify.recipients"},
	} {
		_, err := New(tc.cfg)
		if e, ok := invalid.As(err); !ok || e.Field != tc.field {
			t.Errorf("%+v: %v, want a field error for %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := New(Config{BaseURL: "https://s.example.com"}); err == nil {
		t.Error("accepted no Sender")
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: 500 * time.Millisecond, Max: 3 * time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, b.Delay(n))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Delay (-want +got):\n%s", diff)
	}
	if d := (Backoff{}).withDefaults(); d.Initial != time.Second || d.Max != 30*time.Second || d.Attempts != 6 {
		t.Errorf("defaults %+v", d)
	}
}
