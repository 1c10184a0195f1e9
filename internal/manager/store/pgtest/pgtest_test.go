package pgtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Each test gets its own database on the one server; tables of one are invisible to the other.
func TestNewDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases with one URL %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("table of database a visible in database b")
	}
	var version int
	if err := ca.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 150000 {
		t.Fatalf("server version %d, want 15 or newer", version)
	}
}

// A database is dropped when its test ends.
func TestDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var url string
	t.Run("uses", func(t *testing.T) { url = pgtest.NewDatabase(t) })
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err == nil {
		c.Close(ctx)
		t.Fatalf("database %s still exists after its test", url)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		t.Fatalf("connect to the dropped database: %v, want 3D000 (does not exist)", err)
	}
}

// The binaries are found where Debian puts them, and an override that holds none is refused.
func TestBinDir(t *testing.T) {
	if _, err := pgtest.BinDir(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(pgtest.BinDirEnv, t.TempDir())
	if _, err := pgtest.BinDir(); err == nil {
		t.Fatal("an empty PGTEST_BIN_DIR was accepted")
	}
}
