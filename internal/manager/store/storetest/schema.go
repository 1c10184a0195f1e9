package storetest

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
)

// Migrator is an engine's store with its schema methods.
type Migrator interface {
	store.Store
	Migrate(ctx context.Context) error
	CheckSchema(ctx context.Context) error
	SchemaVersion(ctx context.Context) (current, latest int64, err error)
}

// SchemaEngine opens one engine for the schema-version cases.
type SchemaEngine struct {
	// NewDatabase returns the location (URL or file path) of a fresh, empty database.
	NewDatabase func(t *testing.T) string
	// Open opens the database at loc with the engine's Open and these options; the test closes it.
	Open func(ctx context.Context, loc string, opts ...sqlstore.Option) (Migrator, error)
	// Migrations are the engine's embedded migrations.
	Migrations fs.FS
	// Schema describes the schema of the database at loc, one line per column, index and
	// constraint (the engine's catalog), in a stable order: two databases with equal lines have
	// the same schema.
	Schema func(t *testing.T, loc string) []string
	// ConcurrentMigrate: the engine serializes migrations across processes (PostgreSQL's
	// advisory lock), so several stores migrating one database at once all succeed.
	ConcurrentMigrate bool
}

// LatestVersion is the schema version this binary's migrations end at (the newest of them).
const LatestVersion = 15

// futureMigration is a version no binary knows: a database migrated by a newer manager.
const futureMigration = "99999_future.sql"

// WithFuture returns migrations plus one newer version.
func WithFuture(migrations fs.FS) fs.FS {
	out := fstest.MapFS{}
	_ = fs.WalkDir(migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations, p)
		out[p] = &fstest.MapFile{Data: b}
		return err
	})
	out[futureMigration] = &fstest.MapFile{Data: []byte(
		"-- +goose Up\nCREATE TABLE future_things (id INTEGER PRIMARY KEY);\n-- +goose Down\nDROP TABLE future_things;\n")}
	return out
}

// WithoutLatest returns migrations without its newest version: the binary of the release before.
func WithoutLatest(migrations fs.FS) fs.FS {
	out := fstest.MapFS{}
	var latest string
	_ = fs.WalkDir(migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations, p)
		out[p] = &fstest.MapFile{Data: b}
		latest = max(latest, p)
		return err
	})
	delete(out, latest)
	return out
}

// ExerciseSchema runs the migration and schema-version cases.
func ExerciseSchema(t *testing.T, e SchemaEngine) {
	open := func(t *testing.T, loc string, opts ...sqlstore.Option) (Migrator, error) {
		t.Helper()
		s, err := e.Open(t.Context(), loc, opts...)
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
		}
		return s, err
	}
	mustOpen := func(t *testing.T, loc string, opts ...sqlstore.Option) Migrator {
		t.Helper()
		s, err := open(t, loc, opts...)
		requireOK(t, err, "open")
		return s
	}
	requireMismatch := func(t *testing.T, err error, hint string) {
		t.Helper()
		requireErr(t, err, store.ErrSchemaMismatch, "schema check")
		if !strings.Contains(err.Error(), hint) {
			t.Fatalf("schema error %q does not say %q", err, hint)
		}
	}

	t.Run("NotMigratedRefused", func(t *testing.T) {
		t.Parallel()
		loc := e.NewDatabase(t)
		s := mustOpen(t, loc)
		cur, latest, err := s.SchemaVersion(t.Context())
		requireOK(t, err, "schema version")
		if cur != 0 || latest < 1 {
			t.Fatalf("fresh database: version %d, latest %d; want 0 and >= 1", cur, latest)
		}
		requireMismatch(t, s.CheckSchema(t.Context()), "run `manager migrate`")
		_, err = open(t, loc, sqlstore.WithSchemaCheck())
		requireMismatch(t, err, "run `manager migrate`")
		// Checking wrote nothing: the database is still unmigrated.
		cur, _, err = s.SchemaVersion(t.Context())
		requireOK(t, err, "schema version")
		requireEqual(t, cur, int64(0), "version after checks")
	})
	t.Run("MigrateThenServe", func(t *testing.T) {
		t.Parallel()
		loc := e.NewDatabase(t)
		s := mustOpen(t, loc, sqlstore.WithMigrate())
		cur, latest, err := s.SchemaVersion(t.Context())
		requireOK(t, err, "schema version")
		if cur != latest {
			t.Fatalf("after migrate: version %d, latest %d", cur, latest)
		}
		requireOK(t, s.Migrate(t.Context()), "migrate again (nothing to do)")
		served := mustOpen(t, loc, sqlstore.WithSchemaCheck())
		Cluster(t.Context(), t, served, nil)
	})
	t.Run("NewerRefused", func(t *testing.T) {
		t.Parallel()
		loc := e.NewDatabase(t)
		mustOpen(t, loc, sqlstore.WithMigrations(WithFuture(e.Migrations)), sqlstore.WithMigrate())
		_, err := open(t, loc, sqlstore.WithSchemaCheck())
		requireMismatch(t, err, "upgrade the manager")
		_, err = open(t, loc, sqlstore.WithMigrate())
		requireMismatch(t, err, "upgrade the manager")
		s := mustOpen(t, loc)
		requireMismatch(t, s.Migrate(t.Context()), "upgrade the manager")
		cur, _, err := s.SchemaVersion(t.Context())
		requireOK(t, err, "schema version")
		requireEqual(t, cur, int64(99999), "version left as the newer manager put it")
	})
	t.Run("PreviousBinaryRefusesTheNewSchema", func(t *testing.T) {
		t.Parallel()
		loc := e.NewDatabase(t)
		s := mustOpen(t, loc, sqlstore.WithMigrate())
		cur, latest, err := s.SchemaVersion(t.Context())
		requireOK(t, err, "schema version")
		requireEqual(t, []int64{cur, latest}, []int64{LatestVersion, LatestVersion}, "versions")
		previous := WithoutLatest(e.Migrations)
		_, err = open(t, loc, sqlstore.WithMigrations(previous), sqlstore.WithSchemaCheck())
		requireMismatch(t, err, "upgrade the manager")
		_, err = open(t, loc, sqlstore.WithMigrations(previous), sqlstore.WithMigrate())
		requireMismatch(t, err, "upgrade the manager")
	})
	t.Run("OlderRefusedThenMigrated", func(t *testing.T) {
		t.Parallel()
		loc := e.NewDatabase(t)
		mustOpen(t, loc, sqlstore.WithMigrate())
		future := WithFuture(e.Migrations)
		_, err := open(t, loc, sqlstore.WithMigrations(future), sqlstore.WithSchemaCheck())
		requireMismatch(t, err, "run `manager migrate`")
		s := mustOpen(t, loc, sqlstore.WithMigrations(future), sqlstore.WithMigrate())
		requireOK(t, s.CheckSchema(t.Context()), "check after migrating")
	})
	t.Run("CRDHistoryMigration", func(t *testing.T) {
		t.Parallel()
		exerciseCRDHistoryMigration(t, e)
	})
	t.Run("BakeWindowMigration", func(t *testing.T) {
		t.Parallel()
		exerciseBakeWindowMigration(t, e)
	})
	t.Run("OutOfOrderMigration", func(t *testing.T) {
		t.Parallel()
		exerciseOutOfOrderMigration(t, e)
	})
	if e.ConcurrentMigrate {
		t.Run("ConcurrentMigrate", func(t *testing.T) {
			t.Parallel()
			loc := e.NewDatabase(t)
			errs := make([]error, 4)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() { _, errs[i] = open(t, loc, sqlstore.WithMigrate()) })
			}
			wg.Wait()
			requireOK(t, errors.Join(errs...), "replicas migrating at once")
			mustOpen(t, loc, sqlstore.WithSchemaCheck())
		})
	}
}
