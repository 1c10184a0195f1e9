package storetest

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlstore"
)

// crdHistoryMigration is the version of migration 00006 (the CRD history by version).
const crdHistoryMigration = 6

// legacyOperator is the operator the legacy seed registers.
const legacyOperator = "0b7e8f2c-6a51-4c0e-9d3a-6f1d2f9c1e01"

// legacySeed is what a manager stored before migration 00006, per engine: an operator with
// versions 1.0.0, 1.1.0, 2.0.0 and 3.0.0 whose things CRD went A → B → A (revisions stored only
// when it changed, so 3.0.0's A was not stored again), an others CRD shipped since 1.0.0, a
// revision labelled with a version the operator no longer lists, and one posted to /crds.
func legacySeed(engine string) string {
	now, def := "now()", "convert_to('{}', 'UTF8')"
	if engine == "sqlite" {
		now, def = "'2026-01-01T00:00:00.000000Z'", "CAST('{}' AS BLOB)"
	}
	op := "'" + legacyOperator + "'"
	var b strings.Builder
	b.WriteString("-- +goose Up\n")
	fmt.Fprintf(&b, "INSERT INTO operators (id, name, namespace, chart_repository, chart_name, created_at, updated_at) "+
		"VALUES (%s, 'legacy', 'legacy-system', 'https://charts.example.com', 'legacy', %s, %s);\n", op, now, now)
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0", "3.0.0"} {
		fmt.Fprintf(&b, "INSERT INTO operator_versions (operator_id, version, created_at) VALUES (%s, '%s', %s);\n", op, v, now)
	}
	for _, r := range []struct{ name, opID, version, digest string }{
		{"things.example.com", op, "1.0.0", "sha256:a"},
		{"others.example.com", op, "1.0.0", "sha256:x"},
		{"things.example.com", op, "2.0.0", "sha256:b"},
		{"things.example.com", op, "0.9.0", "sha256:old"},
		{"things.example.com", "NULL", "posted", "sha256:p"},
	} {
		fmt.Fprintf(&b, "INSERT INTO crd_schemas (name, crd_group, kind, scope, operator_id, version, digest, definition, created_at) "+
			"VALUES ('%s', 'example.com', 'Thing', 'Namespaced', %s, '%s', '%s', %s, %s);\n", r.name, r.opID, r.version, r.digest, def, now)
	}
	return b.String()
}

// withSeed returns migrations numbered ten times their version, only those below upTo when upTo
// is not 0, and seed as version 10*crdHistoryMigration-1: the data is there just before the
// CRD history migration runs.
func withSeed(migrations fs.FS, upTo int64, seed string) fs.FS {
	out := fstest.MapFS{fmt.Sprintf("%05d_seed.sql", 10*crdHistoryMigration-1): &fstest.MapFile{Data: []byte(seed)}}
	_ = fs.WalkDir(migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		num, rest, _ := strings.Cut(p, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || (upTo != 0 && v >= upTo) {
			return nil
		}
		b, err := fs.ReadFile(migrations, p)
		out[fmt.Sprintf("%05d_%s", 10*v, rest)] = &fstest.MapFile{Data: b}
		return err
	})
	return out
}

// exerciseCRDHistoryMigration migrates a database holding the old CRD history: each stored
// revision maps to the version that registered it, no version counts as recorded whole, the
// versions in between read as before, and the migrated database records new versions.
func exerciseCRDHistoryMigration(t *testing.T, e SchemaEngine) {
	ctx := t.Context()
	loc := e.NewDatabase(t)
	probe, err := e.Open(ctx, loc)
	requireOK(t, err, "open")
	engine := probe.Engine()
	requireOK(t, probe.Close(), "close")
	seed := legacySeed(engine)
	before, err := e.Open(ctx, loc, sqlstore.WithMigrations(withSeed(e.Migrations, crdHistoryMigration, seed)), sqlstore.WithMigrate())
	requireOK(t, err, "migrate to just before the CRD history, with the old data")
	requireOK(t, before.Close(), "close")
	s, err := e.Open(ctx, loc, sqlstore.WithMigrations(withSeed(e.Migrations, 0, seed)), sqlstore.WithMigrate())
	requireOK(t, err, "migrate the CRD history")
	t.Cleanup(func() { _ = s.Close() })

	rows, err := s.CRDVersionList(ctx, &store.CRDVersionListParams{OperatorID: legacyOperator})
	requireOK(t, err, "rows")
	requireEqual(t, names(rows, func(r *store.CRDShipped) string { return r.Version + " " + r.CRDName + "=" + r.Digest }),
		[]string{"1.0.0 others.example.com=sha256:x", "1.0.0 things.example.com=sha256:a", "2.0.0 things.example.com=sha256:b"},
		"each revision maps to the version that registered it")
	recorded, err := s.CRDVersionRecordList(ctx, legacyOperator)
	requireOK(t, err, "recorded")
	requireEqual(t, len(recorded), 0, "versions recorded whole")
	h, err := crds.LoadHistory(ctx, s, legacyOperator, "")
	requireOK(t, err, "history")
	for _, c := range []struct{ version, name, digest string }{
		{"1.1.0", "things.example.com", "sha256:a"},
		{"3.0.0", "things.example.com", "sha256:b"}, // A again: the old data cannot tell
		{"3.0.0", "others.example.com", "sha256:x"},
	} {
		got := h.At(c.version, c.name)
		if got.Row == nil || got.Row.Digest != c.digest || !got.Inferred || got.Dropped {
			t.Errorf("%s of %s after the migration: %+v, want %s inferred", c.name, c.version, got, c.digest)
		}
	}
	rev, err := s.CRDSchemaGetByID(ctx, rows[0].SchemaID)
	requireOK(t, err, "a migrated revision")
	if !rev.Note.IsZero() || rev.Version != "1.0.0" {
		t.Fatalf("migrated revision: %+v", rev)
	}
	_, err = s.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: legacyOperator, Version: "4.0.0"})
	requireOK(t, err, "a new version")
	err = crds.RecordVersion(ctx, s, &crds.VersionRecord{OperatorID: legacyOperator, Version: "4.0.0", CRDs: nil})
	requireOK(t, err, "record a new version that ships no CRD")
	h, err = crds.LoadHistory(ctx, s, legacyOperator, "")
	requireOK(t, err, "history")
	if got := h.At("4.0.0", "things.example.com"); !got.Dropped {
		t.Fatalf("4.0.0 recorded without things: %+v, want dropped", got)
	}
}
