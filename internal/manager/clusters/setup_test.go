package clusters

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package's clusters: kube-apiservers over one etcd, started by the first test that needs
// them and stopped by TestMain. Server roles: 0 general, 1 the healthy peer of the health test,
// 2 removal, 3 stopped by the health test, 4 a registration that fails half-way.
const fleetServers = 5

func TestMain(m *testing.M) { os.Exit(testenv.StopFleet(m.Run())) }

// fleet returns the package's running fleet (testenv.Fleet), starting it on first use.
func fleet(t testing.TB) *controlplane.Fleet {
	t.Helper()
	return testenv.Fleet(t, fleetServers)
}

// testClock is time.Now moved by an offset.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Set(d time.Duration)     { c.offset.Store(int64(d)) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

type bundle struct {
	m      *Manager
	store  *sqlitestore.Store
	dbPath string
	keys   *Keyring
	clock  *testClock
	logs   *testenv.SyncBuffer
	mu     sync.Mutex
	events []CredentialEvent
}

func (b *bundle) eventKinds(cluster string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var kinds []string
	for _, e := range b.events {
		if e.Cluster == cluster {
			kinds = append(kinds, e.Kind)
		}
	}
	return kinds
}

// setup opens a fresh SQLite store and a Manager over it, and checks on cleanup that neither the
// logs nor the database file hold a byte of any fleet server's admin kubeconfig.
func setup(t *testing.T, mod ...func(*Config)) *bundle {
	t.Helper()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "manager.db")
	st, err := sqlitestore.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b := &bundle{store: st, dbPath: dbPath, keys: mustKeyring(t, newKeyLine(t)), clock: &testClock{}, logs: &testenv.SyncBuffer{}}
	b.m = b.newManager(t, b.keys, mod...)
	t.Cleanup(func() {
		b.m.Stop()
		checkNoSecretsAt(t, "the manager's logs", []byte(b.logs.String()))
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
		for _, suffix := range []string{"", "-wal"} {
			if data, err := os.ReadFile(dbPath + suffix); err == nil {
				checkNoSecretsAt(t, "the database file"+suffix, data)
			}
		}
	})
	return b
}

// newManager is another Manager over the bundle's store (a restart, or another keyring).
func (b *bundle) newManager(t *testing.T, keys *Keyring, mod ...func(*Config)) *Manager {
	t.Helper()
	cfg := Config{
		Store: b.store, Keyring: keys, Now: b.clock.Now,
		Logger:         slog.New(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ConnectTimeout: 5 * time.Second, CheckTimeout: 5 * time.Second,
		OnCredential: func(e CredentialEvent) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.events = append(b.events, e)
		},
	}
	for _, f := range mod {
		f(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// secretsOf lists fragments of a kubeconfig that must never appear in an error, a log line or the
// database: the token, the client key and certificate, and the server's address.
func secretsOf(t testing.TB, kubeconfig []byte) []string {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range cfg.AuthInfos {
		if u.Token != "" {
			out = append(out, u.Token)
		}
		for _, data := range [][]byte{u.ClientKeyData, u.ClientCertificateData} {
			out = append(out, pemBodyLines(data)...)
		}
	}
	for _, c := range cfg.Clusters {
		if u, err := url.Parse(c.Server); err == nil {
			out = append(out, u.Host)
		}
	}
	return out
}

// pemBodyLines returns the base64 lines of a PEM block and the base64 of the whole, as a
// kubeconfig holds it.
func pemBodyLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	out := []string{base64.StdEncoding.EncodeToString(data)[:60]}
	for _, line := range strings.Split(string(data), "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

func checkNoSecretsAt(t *testing.T, where string, data []byte) {
	t.Helper()
	f := testenv.RunningFleet()
	if f == nil {
		return
	}
	for _, s := range f.Servers {
		for _, secret := range secretsOf(t, s.Kubeconfig) {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds a fragment of %s's kubeconfig (%.12q...)", where, s.Name, secret)
			}
		}
	}
}

// assertNoKubeconfigIn fails when err quotes a fragment of any of the kubeconfigs.
func assertNoKubeconfigIn(t testing.TB, err error, kubeconfigs ...[]byte) {
	t.Helper()
	for _, kc := range kubeconfigs {
		assertNoSecret(t, err, secretsOf(t, kc)...)
	}
}

// rewrite changes a kubeconfig's current cluster and user.
func rewrite(t testing.TB, kubeconfig []byte, server string, token string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if server != "" {
		cfg.Clusters[kctx.Cluster].Server = server
	}
	if token != "" {
		u := cfg.AuthInfos[kctx.AuthInfo]
		u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, token
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// closedPort returns an https URL on loopback where nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	return "https://" + testenv.FreeAddr(t)
}

func benchStore(b *testing.B) *sqlitestore.Store {
	b.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "manager.db"))
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
