package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// SchemaError is a schema this binary cannot serve: older (run `manager migrate`) or newer
// (upgrade the manager). It wraps store.ErrSchemaMismatch.
type SchemaError struct {
	// Current is the database's version (0: never migrated); Min and Max the versions the binary knows.
	Current, Min, Max int64
}

func (e *SchemaError) Error() string {
	switch {
	case e.Current == 0:
		return fmt.Sprintf("database schema is not initialized but this manager knows versions %d-%d: run `manager migrate`", e.Min, e.Max)
	case e.Current < e.Max:
		return fmt.Sprintf("database schema is at version %d but this manager knows %d-%d: run `manager migrate`", e.Current, e.Min, e.Max)
	default:
		return fmt.Sprintf("database schema is at version %d, newer than this manager (which knows %d-%d): upgrade the manager", e.Current, e.Min, e.Max)
	}
}

func (e *SchemaError) Unwrap() error { return store.ErrSchemaMismatch }

func (s *Store) provider() (*goose.Provider, error) {
	opts := []goose.ProviderOption{
		goose.WithTableName(VersionTable),
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(s.cfg.Logger),
	}
	if s.locker != nil {
		opts = append(opts, goose.WithSessionLocker(s.locker))
	}
	p, err := goose.NewProvider(s.d.Goose, s.write, s.cfg.Migrations, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s store: migrations: %w", s.d.Engine, err)
	}
	return p, nil
}

// knownVersions returns the lowest and highest migration versions this binary holds.
func (s *Store) knownVersions() (minV, maxV int64, err error) {
	p, err := s.provider()
	if err != nil {
		return 0, 0, err
	}
	src := p.ListSources()
	return src[0].Version, src[len(src)-1].Version, nil
}

// SchemaVersion returns the database's schema version (0 when never migrated) and the latest
// version this binary knows. It only reads: it creates no table and takes no lock.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	_, latest, err = s.knownVersions()
	if err != nil {
		return 0, 0, err
	}
	current, err = s.dbVersion(ctx)
	return current, latest, err
}

func (s *Store) dbVersion(ctx context.Context) (int64, error) {
	gs, err := database.NewStore(s.d.Goose, VersionTable)
	if err != nil {
		return 0, fmt.Errorf("%s store: migrations: %w", s.d.Engine, err)
	}
	var exists bool
	if err := s.read.QueryRowContext(ctx, s.d.Queries["SchemaTableExists"], VersionTable).Scan(&exists); err != nil {
		return 0, fmt.Errorf("%s store: read schema version: %w", s.d.Engine, err)
	}
	if !exists {
		return 0, nil
	}
	v, err := gs.GetLatestVersion(ctx, s.read)
	if errors.Is(err, database.ErrVersionNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s store: read schema version: %w", s.d.Engine, err)
	}
	return v, nil
}

// CheckSchema returns a *SchemaError (wrapping store.ErrSchemaMismatch) unless the database is at
// exactly the latest version this binary knows: what serving requires.
func (s *Store) CheckSchema(ctx context.Context) error {
	minV, maxV, err := s.knownVersions()
	if err != nil {
		return err
	}
	cur, err := s.dbVersion(ctx)
	if err != nil {
		return err
	}
	if cur != maxV {
		return &SchemaError{Current: cur, Min: minV, Max: maxV}
	}
	return nil
}

// Migrate applies every pending migration, each in its own transaction, under the engine's
// session lock (a PostgreSQL advisory lock: replicas starting together migrate one at a time).
// A database newer than the binary is refused, not touched.
func (s *Store) Migrate(ctx context.Context) error {
	minV, maxV, err := s.knownVersions()
	if err != nil {
		return err
	}
	if cur, err := s.dbVersion(ctx); err != nil {
		return err
	} else if cur > maxV {
		return &SchemaError{Current: cur, Min: minV, Max: maxV}
	}
	p, err := s.provider()
	if err != nil {
		return err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("%s store: migrate: %w", s.d.Engine, err)
	}
	for _, r := range res {
		s.cfg.Logger.InfoContext(ctx, "store: Applied migration", "engine", s.d.Engine,
			"version", r.Source.Version, "duration", r.Duration)
	}
	return s.CheckSchema(ctx)
}
