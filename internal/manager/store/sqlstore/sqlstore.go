// Package sqlstore is the one implementation of store.Store over database/sql that both engines
// share: the Go logic (arguments, scanning, error mapping, transactions, migrations) and the SQL
// (sql/*.sql, "-- name: X" annotated; shared queries plus each engine's few own, EngineQueries)
// live here once, and each engine (pgstore, sqlitestore) supplies a Dialect: its queries, its
// migrations and how its driver reports a unique violation.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Dialect is what differs between engines.
type Dialect struct {
	// Engine is store.Store's Engine(): "postgres" or "sqlite".
	Engine string
	// Goose is the migration dialect.
	Goose goose.Dialect
	// Queries are the engine's named queries (EngineQueries); every name in QueryNames must be there.
	Queries map[string]string
	// Migrations holds the engine's goose migration files at its root (00001_init.sql, ...).
	Migrations fs.FS
	// Classify maps an engine error to ErrAlreadyExists (unique or primary key violation) or
	// ErrForeignKey (a referenced row is missing), or returns nil when it is neither.
	Classify func(err error) error
	// TimeArg turns a UTC time (microsecond precision) into the engine's query argument.
	TimeArg func(t time.Time) any
}

// ErrForeignKey is a foreign key violation: a referenced row does not exist (or is still
// referenced). Methods that insert children turn it into store.ErrNotFound naming the parent.
var ErrForeignKey = errors.New("foreign key violation")

// VersionTable is the goose table recording the manager's applied migrations.
const VersionTable = "manager_schema_migrations"

// Config is what Options set.
type Config struct {
	// Migrations replaces the dialect's embedded migrations (tests: a schema newer than the binary).
	Migrations fs.FS
	// Schema is what Open does about the schema.
	Schema SchemaAction
	// Logger receives migration progress; nil discards it.
	Logger *slog.Logger
}

// SchemaAction is what Open does about the database schema.
type SchemaAction int

const (
	// SchemaNone: Open neither migrates nor checks (for `manager migrate`, which calls Migrate).
	SchemaNone SchemaAction = iota
	// SchemaCheck: Open refuses a schema older or newer than the binary knows (ErrSchemaMismatch).
	SchemaCheck
	// SchemaMigrate: Open migrates to the binary's latest version (under the engine's lock), then checks.
	SchemaMigrate
)

// Option configures an engine's Open.
type Option func(*Config)

// WithMigrate makes Open migrate the schema to the latest version this binary knows, then check
// it: what `manager serve` does unless told not to.
func WithMigrate() Option { return func(c *Config) { c.Schema = SchemaMigrate } }

// WithSchemaCheck makes Open refuse a schema older or newer than this binary knows, without
// migrating (wrapping store.ErrSchemaMismatch).
func WithSchemaCheck() Option { return func(c *Config) { c.Schema = SchemaCheck } }

// WithMigrations replaces the embedded migrations by fsys (*.sql at its root). For tests.
func WithMigrations(fsys fs.FS) Option { return func(c *Config) { c.Migrations = fsys } }

// WithLogger sets the logger for migration progress.
func WithLogger(l *slog.Logger) Option { return func(c *Config) { c.Logger = l } }

// Store is store.Store over database/sql: reads go to read, writes and transactions to write
// (one pool for PostgreSQL; SQLite's read pool and one-connection write pool).
type Store struct {
	executor
	read, write *sql.DB
	d           *Dialect
	cfg         Config
	locker      lock.SessionLocker
}

var _ store.Store = (*Store)(nil)

// New builds a store on the given pools and applies cfg.Schema. locker (may be nil) serializes
// migrations across processes. On error the caller still owns (and closes) the pools.
func New(ctx context.Context, d *Dialect, read, write *sql.DB, locker lock.SessionLocker, opts ...Option) (*Store, error) {
	for _, name := range QueryNames {
		if _, ok := d.Queries[name]; !ok {
			return nil, fmt.Errorf("%s store: query %s is missing from the engine's SQL", d.Engine, name)
		}
	}
	s := &Store{executor: executor{r: read, w: write, d: d}, read: read, write: write, d: d, locker: locker}
	for _, o := range opts {
		o(&s.cfg)
	}
	if s.cfg.Migrations == nil {
		s.cfg.Migrations = d.Migrations
	}
	if s.cfg.Logger == nil {
		s.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	switch s.cfg.Schema {
	case SchemaMigrate:
		if err := s.Migrate(ctx); err != nil {
			return nil, err
		}
	case SchemaCheck:
		if err := s.CheckSchema(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Engine names the engine.
func (s *Store) Engine() string { return s.d.Engine }

// Ping checks that the database answers, on the write pool (the one transactions need).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.write.PingContext(ctx); err != nil {
		return fmt.Errorf("%s store: ping: %w", s.d.Engine, err)
	}
	return nil
}

// Close closes the pools.
func (s *Store) Close() error {
	err := s.write.Close()
	if s.read != s.write {
		err = errors.Join(err, s.read.Close())
	}
	return err
}

// Begin starts a transaction on the write pool. Inside it, use only the Tx: on SQLite a write
// through the Store while the same goroutine holds a Tx waits for the one write connection forever.
func (s *Store) Begin(ctx context.Context) (store.Tx, error) {
	t, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%s store: begin: %w", s.d.Engine, err)
	}
	return &Tx{executor: executor{r: t, w: t, d: s.d}, tx: t}, nil
}

// Tx is one transaction.
type Tx struct {
	executor
	tx *sql.Tx
}

var _ store.Tx = (*Tx)(nil)

// Commit commits the transaction.
func (t *Tx) Commit(context.Context) error {
	if err := t.tx.Commit(); err != nil {
		return t.mapErr(err)
	}
	return nil
}

// Rollback rolls it back; rolling back a finished transaction is not an error.
func (t *Tx) Rollback(context.Context) error {
	if err := t.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// executor runs the named queries on r (reads) and w (writes).
type executor struct {
	r, w querier
	d    *Dialect
}

func (e *executor) q(name string) string { return e.d.Queries[name] }

// mapErr maps an engine error once: no rows → store.ErrNotFound, a unique violation →
// store.ErrAlreadyExists, a foreign key violation → ErrForeignKey; others pass through.
func (e *executor) mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if c := e.d.Classify(err); c != nil {
		return c
	}
	return err
}

// ts is a time as the engine stores it: UTC, microseconds (PostgreSQL's precision), now if zero.
func (e *executor) ts(t time.Time) any {
	return e.d.TimeArg(normTime(t))
}

// tsPtr is ts for an optional time (nil stays NULL).
func (e *executor) tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return e.d.TimeArg(t.UTC().Truncate(time.Microsecond))
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Truncate(time.Microsecond)
}
