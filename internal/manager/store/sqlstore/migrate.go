package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// SchemaError is a schema this binary cannot serve: older (run `manager migrate`) or newer
// (upgrade the manager). It wraps store.ErrSchemaMismatch.
type SchemaError struct {
	// Current is the database's version (0: never migrated); Min and Max the versions the binary knows.
	Current, Min, Max int64
	// Missing are versions the binary knows, below Current, that the database lacks: a migration
	// that landed after a higher one (00013 after 00014) on a database migrated in between.
	Missing []int64
	// Unknown are versions applied to the database that the binary does not know: a newer manager
	// migrated it.
	Unknown []int64
}

func (e *SchemaError) Error() string {
	switch {
	case e.Current == 0:
		return fmt.Sprintf("database schema is not initialized but this manager knows versions %d-%d: run `manager migrate`", e.Min, e.Max)
	case len(e.Unknown) > 0:
		return fmt.Sprintf("database schema is at version %d, newer than this manager (which knows %d-%d; not %s): upgrade the manager", e.Current, e.Min, e.Max, versionList(e.Unknown))
	case len(e.Missing) > 0:
		return fmt.Sprintf("database schema is at version %d but lacks %s of the versions %d-%d this manager knows: run `manager migrate`", e.Current, versionList(e.Missing), e.Min, e.Max)
	default:
		return fmt.Sprintf("database schema is at version %d but this manager knows %d-%d: run `manager migrate`", e.Current, e.Min, e.Max)
	}
}

func (e *SchemaError) Unwrap() error { return store.ErrSchemaMismatch }

// versionList is "version 13" or "versions 7, 13".
func versionList(vs []int64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatInt(v, 10)
	}
	if len(vs) == 1 {
		return "version " + parts[0]
	}
	return "versions " + strings.Join(parts, ", ")
}

// provider allows out-of-order migrations: a database migrated to a version whose lower
// neighbour landed later (00014, then 00013) gets the lower one applied by the next Migrate,
// instead of goose refusing every migration from then on. A migration is written to apply after
// any other for that reason (each creates or alters what it alone owns).
func (s *Store) provider() (*goose.Provider, error) {
	opts := []goose.ProviderOption{
		goose.WithTableName(VersionTable),
		goose.WithDisableGlobalRegistry(true),
		goose.WithAllowOutofOrder(true),
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

// knownVersions returns the migration versions this binary holds, in order.
func (s *Store) knownVersions() ([]int64, error) {
	p, err := s.provider()
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, src := range p.ListSources() {
		out = append(out, src.Version)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s store: no migrations", s.d.Engine)
	}
	return out, nil
}

// SchemaVersion returns the database's schema version (its highest applied migration; 0 when
// never migrated) and the latest version this binary knows. It only reads: it creates no table
// and takes no lock.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	known, err := s.knownVersions()
	if err != nil {
		return 0, 0, err
	}
	applied, err := s.appliedVersions(ctx)
	if err != nil {
		return 0, 0, err
	}
	return maxVersion(applied), known[len(known)-1], nil
}

// appliedVersions returns the versions applied to the database (none when never migrated),
// without goose's version 0.
func (s *Store) appliedVersions(ctx context.Context) ([]int64, error) {
	gs, err := database.NewStore(s.d.Goose, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("%s store: migrations: %w", s.d.Engine, err)
	}
	var exists bool
	if err := s.read.QueryRowContext(ctx, s.d.Queries["SchemaTableExists"], VersionTable).Scan(&exists); err != nil {
		return nil, fmt.Errorf("%s store: read schema version: %w", s.d.Engine, err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := gs.ListMigrations(ctx, s.read)
	if err != nil {
		return nil, fmt.Errorf("%s store: read schema versions: %w", s.d.Engine, err)
	}
	var out []int64
	for _, r := range rows {
		if r.Version != 0 {
			out = append(out, r.Version)
		}
	}
	return out, nil
}

func maxVersion(vs []int64) int64 {
	var m int64
	for _, v := range vs {
		m = max(m, v)
	}
	return m
}

// schemaState compares the database's applied versions with the binary's: nil when every known
// version is applied and nothing else, otherwise the *SchemaError saying which way it is off.
func (s *Store) schemaState(ctx context.Context) (*SchemaError, error) {
	known, err := s.knownVersions()
	if err != nil {
		return nil, err
	}
	applied, err := s.appliedVersions(ctx)
	if err != nil {
		return nil, err
	}
	e := &SchemaError{Current: maxVersion(applied), Min: known[0], Max: known[len(known)-1]}
	for _, v := range applied {
		if !slices.Contains(known, v) {
			e.Unknown = append(e.Unknown, v)
		}
	}
	for _, v := range known {
		if v < e.Current && !slices.Contains(applied, v) {
			e.Missing = append(e.Missing, v)
		}
	}
	slices.Sort(e.Unknown)
	if len(e.Unknown) == 0 && len(e.Missing) == 0 && e.Current == e.Max {
		return nil, nil
	}
	return e, nil
}

// CheckSchema returns a *SchemaError (wrapping store.ErrSchemaMismatch) unless the database has
// exactly the migrations this binary knows, all of them: what serving requires.
func (s *Store) CheckSchema(ctx context.Context) error {
	e, err := s.schemaState(ctx)
	if err != nil {
		return err
	}
	if e != nil {
		return e
	}
	return nil
}

// Migrate applies every pending migration, a missing lower one first, each in its own
// transaction, under the engine's session lock (a PostgreSQL advisory lock: replicas starting
// together migrate one at a time). A database newer than the binary is refused, not touched.
func (s *Store) Migrate(ctx context.Context) error {
	if e, err := s.schemaState(ctx); err != nil {
		return err
	} else if e != nil && len(e.Unknown) > 0 {
		return e
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
