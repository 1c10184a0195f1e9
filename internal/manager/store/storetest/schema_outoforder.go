package storetest

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
)

// The migration that landed after a higher one: 00013 (operator baselines) was committed after
// 00014 (analyses), so a database migrated by a build between the two is at 00014 without 00013.
const lateMigration, earlierHigher = 13, 14

// withoutVersions returns migrations without the given versions: the binary of a build that did
// not have them.
func withoutVersions(migrations fs.FS, versions ...int64) fs.FS {
	out := fstest.MapFS{}
	_ = fs.WalkDir(migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, v := range versions {
			if strings.HasPrefix(p, fmt.Sprintf("%05d_", v)) {
				return nil
			}
		}
		b, err := fs.ReadFile(migrations, p)
		out[p] = &fstest.MapFile{Data: b}
		return err
	})
	return out
}

// exerciseOutOfOrderMigration: a database at 00014 without 00013 is refused as not migrated (by
// this binary and by the build that had 00013 and 00014 but not 00015, which took it as current
// before), and migrating it applies 00013: it ends with the same schema as a fresh database.
func exerciseOutOfOrderMigration(t *testing.T, e SchemaEngine) {
	ctx := t.Context()
	gap := e.NewDatabase(t)
	s, err := e.Open(ctx, gap, sqlstore.WithMigrations(withoutVersions(e.Migrations, lateMigration, bakeWindowMigration)), sqlstore.WithMigrate())
	requireOK(t, err, "migrate with the build that had 00014 but not 00013")
	cur, _, err := s.SchemaVersion(ctx)
	requireOK(t, err, "schema version")
	requireEqual(t, cur, int64(earlierHigher), "version of the database without 00013")
	requireOK(t, s.Close(), "close")

	for what, migrations := range map[string]fs.FS{
		"this binary":                         e.Migrations,
		"the build with 00013 and 00014 only": withoutVersions(e.Migrations, bakeWindowMigration),
	} {
		_, err := e.Open(ctx, gap, sqlstore.WithMigrations(migrations), sqlstore.WithSchemaCheck())
		requireErr(t, err, store.ErrSchemaMismatch, what+" serving the database without 00013")
		if !strings.Contains(err.Error(), "lacks version 13") || !strings.Contains(err.Error(), "run `manager migrate`") {
			t.Fatalf("%s: %q does not say that version 13 is missing and to migrate", what, err)
		}
	}
	s, err = e.Open(ctx, gap, sqlstore.WithMigrate())
	requireOK(t, err, "migrate the database without 00013")
	requireOK(t, s.CheckSchema(ctx), "check after migrating")
	requireOK(t, s.Close(), "close")

	fresh := e.NewDatabase(t)
	s, err = e.Open(ctx, fresh, sqlstore.WithMigrate())
	requireOK(t, err, "migrate a fresh database")
	requireOK(t, s.Close(), "close")
	want, got := e.Schema(t, fresh), e.Schema(t, gap)
	if !slices.ContainsFunc(want, func(l string) bool { return strings.Contains(l, "operator_baselines") }) {
		t.Fatalf("the fresh schema has no operator_baselines:\n%s", strings.Join(want, "\n"))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("schema migrated out of order differs from a fresh one:\nonly fresh: %v\nonly out of order: %v",
			minus(want, got), minus(got, want))
	}
}

// minus returns the lines of a that b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	return out
}
