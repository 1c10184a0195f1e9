// Package pgstore is the manager's PostgreSQL (15+) store engine, through pgx v5: a pgxpool,
// shared with database/sql (stdlib.OpenDBFromPool) for the one implementation in sqlstore, and
// exposed by Pool so the job engine can use the same connections.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the engine's embedded goose migrations, at the root of the FS.
var Migrations = mustSub(migrationFiles, "migrations")

// MigrationLockID is the PostgreSQL advisory lock key held while migrating, so replicas starting
// together migrate one at a time (a constant: "slipway-manager" in ASCII, truncated).
const MigrationLockID int64 = 0x736c69706d616e

var dialect = &sqlstore.Dialect{
	Engine:     sqlstore.EnginePostgres,
	Goose:      goose.DialectPostgres,
	Queries:    sqlstore.MustEngineQueries(sqlstore.EnginePostgres),
	Migrations: Migrations,
	Classify:   classify,
	TimeArg:    func(t time.Time) any { return t },
}

// classify maps PostgreSQL's unique_violation (23505) and foreign_key_violation (23503).
func classify(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil
	}
	switch pgErr.Code {
	case "23505":
		return store.ErrAlreadyExists
	case "23503":
		return sqlstore.ErrForeignKey
	}
	return nil
}

// Option configures Open.
type Option = sqlstore.Option

// WithMigrate makes Open migrate to the latest schema (under the advisory lock), then check it.
func WithMigrate() Option { return sqlstore.WithMigrate() }

// WithSchemaCheck makes Open refuse a schema older or newer than this binary (store.ErrSchemaMismatch).
func WithSchemaCheck() Option { return sqlstore.WithSchemaCheck() }

// WithMigrations replaces the embedded migrations (tests).
func WithMigrations(fsys fs.FS) Option { return sqlstore.WithMigrations(fsys) }

// WithLogger logs migrations.
func WithLogger(l *slog.Logger) Option { return sqlstore.WithLogger(l) }

// Store is the PostgreSQL engine: store.Store plus Migrate, CheckSchema, SchemaVersion and Pool.
type Store struct {
	*sqlstore.Store
	pool *pgxpool.Pool
}

// Open connects to url (postgres://…; pgxpool's pool_* parameters apply), checks that the
// server answers and is PostgreSQL 15 or newer (CheckServerVersion), and applies the options; it
// neither migrates nor checks the schema unless WithMigrate or WithSchemaCheck is given.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres store: database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: connect to %s:%d/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	if err := checkServer(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(MigrationLockID), lock.WithLockTimeout(1, 600))
	if err != nil {
		_ = db.Close()
		pool.Close()
		return nil, fmt.Errorf("postgres store: migration lock: %w", err)
	}
	s, err := sqlstore.New(ctx, dialect, db, db, locker, opts...)
	if err != nil {
		_ = db.Close()
		pool.Close()
		return nil, err
	}
	return &Store{Store: s, pool: pool}, nil
}

// Pool is the pgx pool under the store, for the job engine (River) to share.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the database/sql handle and the pool.
func (s *Store) Close() error {
	err := s.Store.Close()
	s.pool.Close()
	return err
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
