package analysis

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
)

var keyLines = map[string]string{}

// keyring loads the keys named ids (the same bytes for the same id in one test binary).
func keyring(t *testing.T, ids ...string) *clusters.Keyring {
	t.Helper()
	var lines []string
	for _, id := range ids {
		if keyLines[id] == "" {
			l, err := clusters.GenerateKey()
			if err != nil {
				t.Fatal(err)
			}
			_, b64, _ := strings.Cut(l, ":")
			keyLines[id] = id + ":" + b64
		}
		lines = append(lines, keyLines[id])
	}
	k, err := clusters.ParseKeyring([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A cluster's Prometheus token is stored sealed (its bytes nowhere in the row), opens only for
// its own cluster, and is re-sealed under a new primary key by RotateKeys.
func TestSealOpenRotate(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "db.sqlite"), sqlitestore.WithMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	c, err := st.ClusterCreate(ctx, &store.ClusterCreateParams{ID: "11111111-1111-1111-1111-111111111111", Name: "east",
		Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "a", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	a := keyring(t, "a")
	p := Prometheus{URL: "https://prom:9090", AuthKind: AuthBearer, BearerToken: "tok-secret-123"}
	row, err := Seal(a, c.ID, c.Name, p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(row.SecretCiphertext, []byte("tok-secret-123")) || row.KeyID != "a" {
		t.Fatalf("sealed row %+v", row)
	}
	row.UpdatedAt = time.Now()
	if _, err := st.ClusterPrometheusSet(ctx, row); err != nil {
		t.Fatal(err)
	}
	got, err := Lookup(ctx, st, a, "east")
	if err != nil || got.BearerToken != "tok-secret-123" || got.URL != p.URL {
		t.Fatalf("Lookup: %+v %v", got, err)
	}
	moved := *row
	moved.ClusterID = "22222222-2222-2222-2222-222222222222"
	if _, err := Open(a, &moved); err == nil {
		t.Fatal("a ciphertext moved to another cluster opened")
	}

	ba := keyring(t, "b", "a")
	if n, err := RotateKeys(ctx, st, ba); err != nil || n != 1 {
		t.Fatalf("RotateKeys: %d %v", n, err)
	}
	stored, _ := st.ClusterPrometheusGet(ctx, "east")
	if stored.KeyID != "b" {
		t.Fatalf("key after rotation %q, want b", stored.KeyID)
	}
	if n, err := RotateKeys(ctx, st, ba); err != nil || n != 0 {
		t.Fatalf("second RotateKeys: %d %v", n, err)
	}
	if got, err := Lookup(ctx, st, ba, "east"); err != nil || got.BearerToken != "tok-secret-123" {
		t.Fatalf("after rotation: %+v %v", got, err)
	}
}
