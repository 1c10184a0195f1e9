package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
	"github.com/slipway-dev/slipway/internal/manager/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func newStore(t testing.TB) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), pgtest.NewDatabase(t), pgstore.WithMigrate())
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
		NewDatabase: func(t *testing.T) string { return pgtest.NewDatabase(t) },
		Open: func(ctx context.Context, url string, opts ...sqlstore.Option) (storetest.Migrator, error) {
			return pgstore.Open(ctx, url, opts...)
		},
		Migrations:        pgstore.Migrations,
		Schema:            schema,
		ConcurrentMigrate: true,
	})
}

// schema lists the database's columns, indexes and constraints from PostgreSQL's catalog.
func schema(t *testing.T, url string) []string {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.Pool().Query(t.Context(), `
SELECT format('column %s.%s #%s %s null=%s default=%s identity=%s', table_name, column_name,
    ordinal_position, data_type, is_nullable, column_default, is_identity)
FROM information_schema.columns WHERE table_schema = current_schema()
UNION ALL
SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
UNION ALL
SELECT format('constraint %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// Pool is the live pgx pool under the store, usable beside it (the job engine shares it).
func TestPool(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	storetest.Cluster(t.Context(), t, s, &storetest.ClusterOpts{Name: "via-store"})
	var n int
	if err := s.Pool().QueryRow(t.Context(), "SELECT count(*) FROM clusters WHERE name = 'via-store'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("pool sees %d clusters, want 1", n)
	}
}

// A bad URL and an unreachable server are clear errors.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"mysql://x": "database URL",
		"postgres://postgres@127.0.0.1:1/x?connect_timeout=2": "connect to 127.0.0.1:1/x",
	} {
		_, err := pgstore.Open(t.Context(), url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v, want an error saying %q", url, err, want)
		}
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(tb testing.TB) store.Store { return newStore(tb) })
}
