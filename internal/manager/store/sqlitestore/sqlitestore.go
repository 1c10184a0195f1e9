// Package sqlitestore is the manager's embedded SQLite store engine (modernc.org/sqlite, pure
// Go), the default when no PostgreSQL URL is given. One file, WAL mode; a read pool of several
// query-only connections and a write pool of one connection, so writers queue in Go instead of
// failing with SQLITE_BUSY; transactions run on the write pool and begin IMMEDIATE.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the engine's embedded goose migrations, at the root of the FS.
var Migrations = mustSub(migrationFiles, "migrations")

var dialect = &sqlstore.Dialect{
	Engine:     sqlstore.EngineSQLite,
	Goose:      goose.DialectSQLite3,
	Queries:    sqlstore.MustEngineQueries(sqlstore.EngineSQLite),
	Migrations: Migrations,
	Classify:   classify,
	TimeArg:    func(t time.Time) any { return t.Format(sqlstore.TimeLayout) },
}

// classify maps SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY and _FOREIGNKEY.
func classify(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return store.ErrAlreadyExists
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlstore.ErrForeignKey
	}
	return nil
}

// Option configures Open.
type Option = sqlstore.Option

// WithMigrate makes Open migrate to the latest schema, then check it.
func WithMigrate() Option { return sqlstore.WithMigrate() }

// WithSchemaCheck makes Open refuse a schema older or newer than this binary (store.ErrSchemaMismatch).
func WithSchemaCheck() Option { return sqlstore.WithSchemaCheck() }

// WithMigrations replaces the embedded migrations (tests).
func WithMigrations(fsys fs.FS) Option { return sqlstore.WithMigrations(fsys) }

// WithLogger logs migrations.
func WithLogger(l *slog.Logger) Option { return sqlstore.WithLogger(l) }

// Store is the SQLite engine: store.Store plus Migrate, CheckSchema and SchemaVersion.
type Store struct {
	*sqlstore.Store
}

// busyTimeout is how long a connection waits for another process's lock (e.g. `manager
// rotate-key` beside a running server) before SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Open opens (creating it and its directory when missing) the database file at path and applies
// the options; it neither migrates nor checks the schema unless WithMigrate or WithSchemaCheck.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite store: empty database path")
	}
	if strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("sqlite store: database path %q: give a plain file path (no '?', '#', file: or :memory:)", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	// The write pool first: it creates the file and switches it to WAL before readers open it.
	write, err := openPool(ctx, path, false)
	if err != nil {
		return nil, err
	}
	read, err := openPool(ctx, path, true)
	if err != nil {
		_ = write.Close()
		return nil, err
	}
	s, err := sqlstore.New(ctx, dialect, read, write, nil, opts...)
	if err != nil {
		_ = read.Close()
		_ = write.Close()
		return nil, err
	}
	return &Store{Store: s}, nil
}

// openPool opens the write pool (one connection, BEGIN IMMEDIATE) or the read pool (query-only).
func openPool(ctx context.Context, path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	// busy_timeout first, so that the pragmas after it already wait instead of failing.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Set("_txlock", "immediate")
	}
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	if readOnly {
		n := max(4, runtime.GOMAXPROCS(0))
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
	} else {
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
	}
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	return db, nil
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
