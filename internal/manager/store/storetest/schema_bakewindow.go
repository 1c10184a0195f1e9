package storetest

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
)

// bakeWindowMigration is the version of migration 00015 (a deployment's bake window).
const bakeWindowMigration = 15

// seededBefore returns every migration numbered ten times its version, and seed as version
// 10*version-1: the data is there just before that migration runs.
func seededBefore(migrations fs.FS, version int64, seed string) fs.FS {
	out := fstest.MapFS{fmt.Sprintf("%05d_seed.sql", 10*version-1): &fstest.MapFile{Data: []byte(seed)}}
	_ = fs.WalkDir(migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		num, rest, _ := strings.Cut(p, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil
		}
		b, err := fs.ReadFile(migrations, p)
		out[fmt.Sprintf("%05d_%s", 10*v, rest)] = &fstest.MapFile{Data: b}
		return err
	})
	return out
}

// exerciseBakeWindowMigration migrates a database holding a deployment stored before migration
// 00015: it reads back with the shipped default bake window, 15 minutes.
func exerciseBakeWindowMigration(t *testing.T, e SchemaEngine) {
	ctx := t.Context()
	loc := e.NewDatabase(t)
	probe, err := e.Open(ctx, loc)
	requireOK(t, err, "open")
	engine := probe.Engine()
	requireOK(t, probe.Close(), "close")
	now := "now()"
	if engine == "sqlite" {
		now = "'2026-01-01T00:00:00.000000Z'"
	}
	const op, dep = "'5d0c1f52-3f0e-4a43-9d55-0e2b1f6c7a01'", "5d0c1f52-3f0e-4a43-9d55-0e2b1f6c7a02"
	seed := "-- +goose Up\n" +
		fmt.Sprintf("INSERT INTO operators (id, name, namespace, chart_repository, chart_name, created_at, updated_at) "+
			"VALUES (%s, 'baked', 'baked-system', 'https://charts.example.com', 'baked', %s, %s);\n", op, now, now) +
		fmt.Sprintf("INSERT INTO deployments (id, operator_id, operator_name, version, strategy, status, created_at, updated_at) "+
			"VALUES ('%s', %s, 'baked', '1.0.0', 'Direct', 'Completed', %s, %s);\n", dep, op, now, now)
	s, err := e.Open(ctx, loc, sqlstore.WithMigrations(seededBefore(e.Migrations, bakeWindowMigration, seed)), sqlstore.WithMigrate())
	requireOK(t, err, "migrate with a deployment stored before the bake window")
	t.Cleanup(func() { _ = s.Close() })
	d, err := s.DeploymentGetByID(ctx, dep)
	requireOK(t, err, "the old deployment")
	requireEqual(t, d.BakeWindow, 15*time.Minute, "the bake window of a deployment stored before migration 00015")
}
