package sqlstore

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The engines' names: store.Store's Engine() and the name of each engine's own SQL file.
const (
	EnginePostgres = "postgres"
	EngineSQLite   = "sqlite"
)

// The manager's SQL, one source for both engines: queries*.sql are shared and written in
// PostgreSQL, which SQLite runs through toSQLite; postgres.sql and sqlite.sql hold only the few
// queries whose meaning differs per engine (row-skipping claims, the admission lock), each under
// the same name in both.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// EngineQueries returns an engine's named queries: the shared ones (for SQLite through toSQLite)
// and the engine's own. A name in both the shared files and the engine's file is an error, and so
// is a shared query that toSQLite cannot run on SQLite.
func EngineQueries(engine string) (map[string]string, error) {
	sqlDir, err := fs.Sub(sqlFiles, "sql")
	if err != nil {
		return nil, err
	}
	return engineQueries(sqlDir, engine)
}

// engineQueries is EngineQueries over the SQL files at the root of sqlDir.
func engineQueries(sqlDir fs.FS, engine string) (map[string]string, error) {
	if engine != EnginePostgres && engine != EngineSQLite {
		return nil, fmt.Errorf("unknown engine %q", engine)
	}
	shared, err := parseQueryFS(sqlDir, "queries*.sql")
	if err != nil {
		return nil, err
	}
	own, err := parseQueryFS(sqlDir, engine+".sql")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(shared)+len(own))
	for name, q := range shared {
		if engine == EngineSQLite {
			if q, err = toSQLite(q); err != nil {
				return nil, fmt.Errorf("query %s: %w", name, err)
			}
		}
		out[name] = q
	}
	for _, name := range slices.Sorted(maps.Keys(own)) {
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("query %s is both shared and in %s.sql", name, engine)
		}
		out[name] = own[name]
	}
	return out, nil
}

// MustEngineQueries is EngineQueries for an engine's Dialect: the SQL is embedded, so an error is
// a bug of the build (and TestEngineQueries fails first).
func MustEngineQueries(engine string) map[string]string {
	q, err := EngineQueries(engine)
	if err != nil {
		panic("sqlstore: " + err.Error())
	}
	return q
}

// SQLite runs the shared (PostgreSQL) queries with three constructs rewritten, the dialect
// differences written once:
//   - a cast (`$2::timestamptz`, `value::uuid`) is dropped: PostgreSQL needs it where it cannot
//     infer a parameter's type (a SELECT list, `$3 IS NULL`); SQLite's values carry their own
//     type, and the STRICT tables check what is stored.
//   - a row lock (`FOR UPDATE`, `FOR NO KEY UPDATE`) is dropped: SQLite's one write connection
//     already serializes writers, and its transactions begin IMMEDIATE.
//   - json_array_elements_text (a JSON array's elements as rows) is json_each.
//
// Only SQL outside string literals, quoted identifiers and comments is rewritten. A construct
// whose meaning SQLite cannot keep is refused, not rewritten: such a query is written per engine
// (postgres.sql, sqlite.sql).
var (
	sqliteCast     = regexp.MustCompile(`\s*::\s*[A-Za-z_][A-Za-z0-9_]*(\[\])?`)
	sqliteRowLock  = regexp.MustCompile(`(?i)\s*\bFOR\s+(NO\s+KEY\s+)?UPDATE\b`)
	sqliteJSONRows = regexp.MustCompile(`(?i)\bjson_array_elements_text\s*\(`)
	sqliteRefused  = regexp.MustCompile(`(?i)\bSKIP\s+LOCKED\b|\bNOWAIT\b|\bFOR\s+(KEY\s+)?SHARE\b|\bMATERIALIZED\b|\bpg_\w+|\bANY\s*\(|\bILIKE\b`)
)

// toSQLite rewrites a shared query for SQLite (see sqliteCast and the rules above it).
func toSQLite(q string) (string, error) {
	var out strings.Builder
	for q != "" {
		n := codeLen(q)
		code := q[:n]
		if bad := sqliteRefused.FindString(code); bad != "" {
			return "", fmt.Errorf("%q has no SQLite equivalent: write the query in postgres.sql and sqlite.sql", bad)
		}
		code = sqliteCast.ReplaceAllString(code, "")
		code = sqliteRowLock.ReplaceAllString(code, "")
		code = sqliteJSONRows.ReplaceAllString(code, "json_each(")
		out.WriteString(code)
		q = q[n:]
		if q == "" {
			break
		}
		m, err := quotedLen(q)
		if err != nil {
			return "", err
		}
		out.WriteString(q[:m])
		q = q[m:]
	}
	return out.String(), nil
}

// codeLen is the length of the SQL before q's first string literal, quoted identifier or comment.
func codeLen(q string) int {
	for i := 0; i < len(q); i++ {
		switch {
		case q[i] == '\'' || q[i] == '"':
			return i
		case strings.HasPrefix(q[i:], "--") || strings.HasPrefix(q[i:], "/*"):
			return i
		}
	}
	return len(q)
}

// quotedLen is the length of the literal, quoted identifier or comment that q starts with.
func quotedLen(q string) (int, error) {
	switch {
	case strings.HasPrefix(q, "--"):
		if i := strings.IndexByte(q, '\n'); i >= 0 {
			return i + 1, nil
		}
		return len(q), nil
	case strings.HasPrefix(q, "/*"):
		if i := strings.Index(q[2:], "*/"); i >= 0 {
			return i + 4, nil
		}
		return 0, errors.New("unterminated /* comment")
	}
	// A quote doubled inside is the quote itself ('it''s'): the scan continues past it.
	quote := q[0]
	for i := 1; i < len(q); i++ {
		if q[i] != quote {
			continue
		}
		if i+1 < len(q) && q[i+1] == quote {
			i++
			continue
		}
		return i + 1, nil
	}
	return 0, fmt.Errorf("unterminated %c quote", quote)
}
