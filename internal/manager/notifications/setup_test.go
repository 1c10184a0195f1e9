package notifications_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// engines are the store engines every test runs on.
var engines = []string{"sqlite", "postgres"}

// forEngine runs test once per engine, in parallel.
func forEngine(t *testing.T, test func(t *testing.T, e *env)) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			test(t, newEnv(t, engine))
		})
	}
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// env is a migrated store on a fresh database, the keyring and the log of every service.
type env struct {
	t      testing.TB
	ctx    context.Context
	store  store.Store
	keys   *clusters.Keyring
	logs   *syncBuffer
	dbPath string // SQLite
	pgURL  string // PostgreSQL
}

func newEnv(t testing.TB, engine string) *env {
	t.Helper()
	e := &env{t: t, ctx: t.Context(), logs: &syncBuffer{}}
	var err error
	switch engine {
	case "sqlite":
		e.dbPath = filepath.Join(t.TempDir(), "manager.db")
		e.store, err = sqlitestore.Open(e.ctx, e.dbPath, sqlitestore.WithMigrate())
	case "postgres":
		e.pgURL = pgtest.NewDatabase(t)
		e.store, err = pgstore.Open(e.ctx, e.pgURL, pgstore.WithMigrate())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.store.Close() })
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if e.keys, err = clusters.ParseKeyring([]byte(line)); err != nil {
		t.Fatal(err)
	}
	return e
}

// service is a Service over the env's store with quick retries; change adjusts the config. It
// is not started.
func (e *env) service(replica string, change func(*notifications.Config)) *notifications.Service {
	e.t.Helper()
	cfg := notifications.Config{Store: e.store, Sealer: e.keys, ReplicaID: replica, PublicURL: "https://slipway.example.org",
		Logger: telemetry.NewLogger(e.logs, slog.LevelDebug, "json"), Timeout: 2 * time.Second, Poll: 20 * time.Millisecond,
		RetryFirst: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond}
	if change != nil {
		change(&cfg)
	}
	s, err := notifications.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// start starts s's worker until the test ends.
func (e *env) start(s *notifications.Service) {
	e.t.Helper()
	if err := s.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(s.Stop)
}

// deliveries lists every delivery, newest first.
func (e *env) deliveries(p store.NotificationListParams) []*store.Notification {
	e.t.Helper()
	p.Limit = store.MaxLimit
	ns, err := e.store.NotificationList(e.ctx, &p)
	if err != nil {
		e.t.Fatal(err)
	}
	return ns
}

// eventually waits (up to a minute) until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// received is one request a receiver got.
type received struct {
	Header http.Header
	Body   []byte
	// Verified is the signature check, done as the docs tell receivers to (nil: it holds).
	Verified error
}

// receiver is a real HTTP server that records every request and answers with answer's status
// (200 when nil), after hang returns (when set).
type receiver struct {
	*httptest.Server
	secret []byte

	mu     sync.Mutex
	got    []received
	answer func(r received) int
	hang   func(r *http.Request)
}

func newReceiver(t testing.TB, secret string) *receiver {
	t.Helper()
	rc := &receiver{secret: []byte(secret)}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	got := received{Header: r.Header.Clone(), Body: body, Verified: verifyAsDocumented(rc.secret, r.Header, body, time.Now())}
	rc.mu.Lock()
	rc.got = append(rc.got, got)
	answer, hang := rc.answer, rc.hang
	rc.mu.Unlock()
	if hang != nil {
		hang(r)
	}
	status := http.StatusOK
	if answer != nil {
		status = answer(got)
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "status %d for %s", status, r.URL.RequestURI()) // echoes the URL's token
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// byDelivery is the requests by X-Slipway-Delivery.
func (rc *receiver) byDelivery() map[string][]received {
	out := map[string][]received{}
	for _, r := range rc.requests() {
		id := r.Header.Get("X-Slipway-Delivery")
		out[id] = append(out[id], r)
	}
	return out
}

// verifyAsDocumented checks a delivery the way docs/manager-rollout.md tells a receiver to,
// without the package's Verify: X-Slipway-Signature is "v1=" and the hex HMAC-SHA256 under the
// secret of X-Slipway-Timestamp, ".", and the raw body; the timestamp within 5 minutes of now.
func verifyAsDocumented(secret []byte, h http.Header, body []byte, now time.Time) error {
	ts := h.Get("X-Slipway-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("stale timestamp")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := "v1=" + hex.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(h.Get("X-Slipway-Signature")), []byte(want)) {
		return errors.New("signature mismatch")
	}
	return nil
}

// webhookChannel creates a webhook channel to rc taking every event.
func webhookChannel(t testing.TB, s *notifications.Service, name string, rc *receiver, routes ...api.ChannelRoute) {
	t.Helper()
	if len(routes) == 0 {
		routes = []api.ChannelRoute{{}}
	}
	_, err := s.CreateChannel(t.Context(), &api.ChannelRequest{Name: name, Kind: notifications.KindWebhook,
		Webhook: &api.WebhookSettings{URL: rc.URL + "/hooks/slipway?token=tok-" + name, Secret: string(rc.secret)},
		Routes:  routes}, "alice")
	if err != nil {
		t.Fatal(err)
	}
}

// clusterDown records, through the hook in a transaction of its own, cluster c's check turning
// Unhealthy for reason.
func clusterDown(t *testing.T, e *env, s *notifications.Service, c *store.Cluster, reason string) {
	t.Helper()
	now := time.Now().UTC()
	down := *c
	down.Health, down.HealthReason, down.HealthCheckedAt = store.HealthUnhealthy, reason, &now
	if err := store.WithTx(e.ctx, e.store, func(ctx context.Context, tx store.Tx) error {
		return s.ClusterHealth(ctx, tx, &down)
	}); err != nil {
		t.Fatal(err)
	}
}
