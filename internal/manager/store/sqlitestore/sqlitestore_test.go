package sqlitestore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
	"github.com/slipway-dev/slipway/internal/manager/store/storetest"
)

func newStore(t testing.TB) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "manager.db"), sqlitestore.WithMigrate())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T) store.Store { return newStore(t) })
}

func TestSchema(t *testing.T) {
	t.Parallel()
	storetest.ExerciseSchema(t, storetest.SchemaEngine{
		NewDatabase: func(t *testing.T) string { return filepath.Join(t.TempDir(), "manager.db") },
		Open: func(ctx context.Context, path string, opts ...sqlstore.Option) (storetest.Migrator, error) {
			return sqlitestore.Open(ctx, path, opts...)
		},
		Migrations: sqlitestore.Migrations,
		Schema:     schema,
	})
}

// schema lists the database's tables, indexes and triggers as SQLite stores them (their CREATE
// statements, amended by every ALTER TABLE).
func schema(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(),
		`SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// The database file is created with its directory, and bad paths get a clear error.
func TestOpenPaths(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new", "dir", "manager.db")
	s, err := sqlitestore.Open(t.Context(), path, sqlitestore.WithMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	// The file is in WAL mode: the -wal file exists beside it once written.
	storetest.Cluster(t.Context(), t, s, nil)
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no WAL file beside the database: %v", err)
	}
	for _, bad := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if _, err := sqlitestore.Open(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "sqlite store") {
			t.Errorf("Open(%q): %v, want a sqlite store error", bad, err)
		}
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(tb testing.TB) store.Store { return newStore(tb) })
}
