package sqlstore

import (
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestToSQLite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		// Casts go, wherever they are; so do row locks, whole.
		{"SELECT d.id, $2::timestamptz, $3 :: text FROM deployments d WHERE d.id = $1::uuid\nFOR NO KEY UPDATE",
			"SELECT d.id, $2, $3 FROM deployments d WHERE d.id = $1"},
		{"SELECT id FROM approvals WHERE id = $1 for update", "SELECT id FROM approvals WHERE id = $1"},
		{"WHERE id IN (SELECT value::uuid FROM json_array_elements_text($1::json))",
			"WHERE id IN (SELECT value FROM json_each($1))"},
		{"SELECT COALESCE(operator_id::text, '') FROM t WHERE x = $1::text[]", "SELECT COALESCE(operator_id, '') FROM t WHERE x = $1"},
		// Literals, quoted identifiers and comments are kept as they are.
		{"SELECT 'a::text FOR UPDATE', 'it''s::x', \"c::d\" FROM t /*filters*/ -- FOR UPDATE x::y\nWHERE a::int = 1",
			"SELECT 'a::text FOR UPDATE', 'it''s::x', \"c::d\" FROM t /*filters*/ -- FOR UPDATE x::y\nWHERE a = 1"},
		// ON CONFLICT ... DO UPDATE is no row lock.
		{"INSERT INTO t VALUES ($1) ON CONFLICT (k) DO UPDATE SET v = excluded.v", "INSERT INTO t VALUES ($1) ON CONFLICT (k) DO UPDATE SET v = excluded.v"},
	} {
		got, err := toSQLite(c.in)
		if err != nil || got != c.want {
			t.Errorf("toSQLite(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for in, want := range map[string]string{
		"SELECT id FROM t LIMIT 1 FOR UPDATE SKIP LOCKED":   `"SKIP LOCKED" has no SQLite equivalent`,
		"SELECT id FROM t FOR UPDATE NOWAIT":                `"NOWAIT" has no SQLite`,
		"SELECT id FROM t FOR KEY SHARE":                    `"FOR KEY SHARE" has no SQLite`,
		"WITH p AS MATERIALIZED (SELECT 1) SELECT * FROM p": `"MATERIALIZED" has no SQLite`,
		"SELECT pg_advisory_xact_lock(1)":                   `"pg_advisory_xact_lock" has no SQLite`,
		"SELECT * FROM t WHERE id = ANY($1)":                `"ANY(" has no SQLite`,
		"SELECT * FROM t WHERE name ILIKE $1":               `"ILIKE" has no SQLite`,
		"SELECT 'unterminated":                              "unterminated ' quote",
		"SELECT 1 /* unterminated":                          "unterminated /* comment",
	} {
		if _, err := toSQLite(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("toSQLite(%q): %v, want an error saying %s", in, err, want)
		}
	}
}

// Every query the store runs is defined for both engines, and no engine has a query the store
// does not run: one engine cannot gain or lose a query alone.
func TestEngineQueries(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(QueryNames))
	if dup := slices.Compact(slices.Clone(want)); len(dup) != len(want) {
		t.Fatalf("QueryNames lists a name twice: %v", want)
	}
	for _, engine := range []string{EnginePostgres, EngineSQLite} {
		q, err := EngineQueries(engine)
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if got := slices.Sorted(maps.Keys(q)); !slices.Equal(got, want) {
			t.Errorf("%s defines %v,\nthe store runs %v", engine, got, want)
		}
	}
	// The engines' own files define the same names, none of them shared.
	own := map[string][]string{}
	for _, engine := range []string{EnginePostgres, EngineSQLite} {
		sqlDir, err := fs.Sub(sqlFiles, "sql")
		if err != nil {
			t.Fatal(err)
		}
		q, err := parseQueryFS(sqlDir, engine+".sql")
		if err != nil {
			t.Fatal(err)
		}
		own[engine] = slices.Sorted(maps.Keys(q))
	}
	if !slices.Equal(own[EnginePostgres], own[EngineSQLite]) {
		t.Errorf("postgres.sql defines %v, sqlite.sql %v", own[EnginePostgres], own[EngineSQLite])
	}
}

func TestEngineQueriesErrors(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, c := range []struct {
		engine string
		files  fstest.MapFS
		want   string
	}{
		{"mysql", fstest.MapFS{}, `unknown engine "mysql"`},
		{EnginePostgres, fstest.MapFS{"queries.sql": file("-- name: A\nSELECT 1"), "postgres.sql": file("-- name: A\nSELECT 2")},
			"query A is both shared and in postgres.sql"},
		{EngineSQLite, fstest.MapFS{"queries.sql": file("-- name: A\nSELECT 1"), "sqlite.sql": file("-- name: B\nSELECT 1\n-- name: B\nSELECT 2")},
			"query B is defined twice"},
		{EngineSQLite, fstest.MapFS{"queries.sql": file("-- name: Claim\nSELECT id FROM t FOR UPDATE SKIP LOCKED"), "sqlite.sql": file("-- name: B\nSELECT 1")},
			`query Claim: "SKIP LOCKED" has no SQLite equivalent`},
		{EnginePostgres, fstest.MapFS{"queries.sql": file("-- name: A\nSELECT 1")}, "no SQL file matches postgres.sql"},
	} {
		if _, err := engineQueries(c.files, c.engine); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want an error saying %s", c.engine, c.files, err, c.want)
		}
	}
}
