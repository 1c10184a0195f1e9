package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
	rolloutengine "github.com/slipway-dev/slipway/internal/manager/rollout/engine"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package's clusters: kube-apiservers over one etcd (testenv.Fleet), started on first use and
// stopped by TestMain. Each test registers them under its own names in its own store.
const fleetServers = 5

func TestMain(m *testing.M) {
	code := testenv.StopFleet(m.Run())
	if err := pgtest.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

func fleet(t testing.TB) *controlplane.Fleet {
	t.Helper()
	return testenv.Fleet(t, fleetServers)
}

// engines are the store engines every API test runs on.
var engines = []string{"sqlite", "postgres"}

// forEngine runs test once per engine, in parallel.
func forEngine(t *testing.T, test func(t *testing.T, engine string)) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			test(t, engine)
		})
	}
}

// bundle is one running API: a real server over TLS on a real store engine.
type bundle struct {
	t      *testing.T
	engine string
	url    string
	client *http.Client
	srv    *Server
	store  store.Store
	// rollouts is the real rollout engine over store, not started: requests are stored and
	// answered, and nothing is installed.
	rollouts *rolloutengine.Engine
	secret   []byte
	logs     *testenv.SyncBuffer
	// bodies collects every response body, for the secrecy checks.
	bodies *testenv.SyncBuffer
	// dbPath is the SQLite file; pgURL the PostgreSQL database.
	dbPath, pgURL string
}

type setupOpts struct {
	rules     map[string]ratelimit.Rule
	plainHTTP []string
	config    Config
	// deps adjusts the server's services (the web UI, the session secret) before New.
	deps func(b *bundle, d *Deps)
}

func withDeps(fn func(b *bundle, d *Deps)) func(*setupOpts) {
	return func(o *setupOpts) { o.deps = fn }
}

func withConfig(cfg Config) func(*setupOpts) {
	return func(o *setupOpts) { o.config = cfg }
}

func withPlainHTTP(host string) func(*setupOpts) {
	return func(o *setupOpts) { o.plainHTTP = append(o.plainHTTP, host) }
}

func withRules(rules map[string]ratelimit.Rule) func(*setupOpts) {
	return func(o *setupOpts) { o.rules = rules }
}

func setup(t *testing.T, engine string, opts ...func(*setupOpts)) *bundle {
	t.Helper()
	var o setupOpts
	for _, f := range opts {
		f(&o)
	}
	ctx := context.Background()
	b := &bundle{t: t, engine: engine, logs: &testenv.SyncBuffer{}, bodies: &testenv.SyncBuffer{}}
	switch engine {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "manager.db")
		st, err := sqlitestore.Open(ctx, path, sqlitestore.WithMigrate())
		if err != nil {
			t.Fatal(err)
		}
		b.store, b.dbPath = st, path
	case "postgres":
		b.pgURL = pgtest.NewDatabase(t)
		st, err := pgstore.Open(ctx, b.pgURL, pgstore.WithMigrate())
		if err != nil {
			t.Fatal(err)
		}
		b.store = st
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	t.Cleanup(func() { _ = b.store.Close() })

	log := telemetry.NewLogger(b.logs, slog.LevelDebug, "json")
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyring, err := clusters.ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	cm, err := clusters.New(clusters.Config{Store: b.store, Keyring: keyring, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	charts, err := operators.New(operators.Options{PlainHTTPRegistries: o.plainHTTP})
	if err != nil {
		t.Fatal(err)
	}
	b.secret = []byte("0123456789abcdef0123456789abcdef-test")
	verifier, err := auth.NewHS256(b.secret, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rules := o.rules
	if rules == nil {
		// The design's limits would throttle the tests' own calls; TestRateLimit runs them.
		rules = map[string]ratelimit.Rule{}
	}
	b.rollouts, err = rolloutengine.New(rolloutengine.Config{Store: b.store, Clusters: cm, Charts: charts, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	notifier, err := notifications.New(notifications.Config{Store: b.store, Sealer: keyring, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	deps := Deps{Store: b.store, Clusters: cm, Charts: charts, Rollouts: b.rollouts, Verifier: verifier,
		Limiter: ratelimit.New(rules, time.Now), Logger: log, Notifications: notifier}
	if o.deps != nil {
		o.deps(b, &deps)
	}
	srv, err := New(o.config, deps)
	if err != nil {
		t.Fatal(err)
	}
	b.srv = srv
	ts := httptest.NewTLSServer(srv.Handler())
	t.Cleanup(ts.Close)
	b.url, b.client = ts.URL, ts.Client()
	return b
}

// token mints a token for subject with roles.
func (b *bundle) token(subject string, roles ...auth.Role) string {
	b.t.Helper()
	tok, err := auth.Mint(b.secret, subject, roles, time.Hour, time.Now())
	if err != nil {
		b.t.Fatal(err)
	}
	return tok
}

// tokenWithoutID signs a token as a manager before token ids did: valid, never looked up in the
// revoked tokens.
func (b *bundle) tokenWithoutID(subject string, roles ...auth.Role) string {
	b.t.Helper()
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": auth.MintIssuer, "sub": subject,
		"roles": names, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).SignedString(b.secret)
	if err != nil {
		b.t.Fatal(err)
	}
	return tok
}

func (b *bundle) admin() string  { return b.token("alice", auth.Admin) }
func (b *bundle) viewer() string { return b.token("victor", auth.Viewer) }

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// apiError decodes the one error shape.
func (r response) apiError(t testing.TB) Error {
	t.Helper()
	var e Error
	r.json(t, &e)
	if e.Code == "" || e.Message == "" {
		t.Fatalf("not the error shape: %s", r.body)
	}
	return e
}

// do sends a request; body is marshalled unless it is a string or []byte.
func (b *bundle) do(method, path, token string, body any, hdr ...string) response {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		j, err := json.Marshal(v)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = b.bodies.Write(data)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// expect fails unless r has status want.
func expect(t testing.TB, what string, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, want, r.body)
	}
}

// expectInvalid fails unless r is a 400 naming field.
func expectInvalid(t testing.TB, what string, r response, field string) Error {
	t.Helper()
	expect(t, what, r, http.StatusBadRequest)
	e := r.apiError(t)
	if e.Details["field"] != field {
		t.Fatalf("%s: field %v, want %q: %s", what, e.Details["field"], field, r.body)
	}
	return e
}

// counts is what the store holds, to show a rejected request wrote nothing.
type counts struct{ clusters, operators, crds int }

func (b *bundle) counts() counts {
	b.t.Helper()
	ctx := context.Background()
	c, err := b.store.ClusterCount(ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	o, err := b.store.OperatorCount(ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	crds, err := b.store.CRDList(ctx, &store.CRDListParams{Limit: store.MaxLimit})
	if err != nil {
		b.t.Fatal(err)
	}
	return counts{c, o, len(crds)}
}
