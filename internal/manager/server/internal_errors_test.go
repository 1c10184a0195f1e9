package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
)

// stopDatabase takes the store's database away under the running server, for real: SQLite's
// file handles are closed; PostgreSQL's database stops accepting connections and the server's
// own are terminated (as when the database is restarted or failed over).
func (b *bundle) stopDatabase() {
	b.t.Helper()
	if b.engine == "sqlite" {
		if err := b.store.Close(); err != nil {
			b.t.Fatal(err)
		}
		return
	}
	u, err := url.Parse(b.pgURL)
	if err != nil {
		b.t.Fatal(err)
	}
	db := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.Server(b.t).URL("postgres"))
	if err != nil {
		b.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+db+" ALLOW_CONNECTIONS false"); err != nil {
		b.t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
		strings.TrimPrefix(u.Path, "/")); err != nil {
		b.t.Fatal(err)
	}
}

// logLines are the JSON log records with message msg and request id id.
func (b *bundle) logLines(msg, id string) []map[string]any {
	b.t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.logs.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			b.t.Fatalf("log line not JSON: %s", sc.Bytes())
		}
		if rec["message"] == msg && rec["requestId"] == id {
			out = append(out, rec)
		}
	}
	return out
}

// TestInternalErrors stops the database under a running server: a request that needs it is a
// 500 in the one error shape that says only "internal error" and the request id, while the log
// line of that request id has the cause; /health answers 503 and says the database is
// unreachable; a mutation's failed audit record is logged, not lost silently.
func TestInternalErrors(t *testing.T) {
	forEngine(t, testInternalErrors)
}

func testInternalErrors(t *testing.T, engine string) {
	b := setup(t, engine)
	// The viewer's token has an id, so whether it was signed out cannot be checked either: that
	// is a 500 too (never let through). olga's has none (signed before token ids), so her
	// mutation reaches its handler, and its audit record fails.
	viewer, olga := b.viewer(), b.tokenWithoutID("olga", auth.Operator)
	r := b.do("GET", "/health", "", nil)
	expect(t, "health before", r, http.StatusOK)
	expect(t, "list before", b.do("GET", "/api/v1/clusters", viewer, nil), http.StatusOK)

	b.stopDatabase()

	for _, req := range []struct {
		what, method, path, token string
		body                      any
	}{
		{"list", "GET", "/api/v1/clusters", viewer, nil},
		{"get", "GET", "/api/v1/operators/widgets", viewer, nil},
		{"create", "POST", "/api/v1/crds", olga, `{"definition": ` + quoted(charttest.YAML(charttest.Gadget(charttest.Base))) + `, "version": "r1"}`},
	} {
		id := "internal-" + engine + "-" + req.what
		r := b.do(req.method, req.path, req.token, req.body, "X-Request-Id", id)
		expect(t, req.what+" with the database stopped", r, http.StatusInternalServerError)
		e := r.apiError(t)
		if e.Code != api.CodeInternal || e.Message != "internal error" || e.Details["requestId"] != id || len(e.Details) != 1 {
			t.Errorf("%s: %s, want code Internal, message \"internal error\" and details with only the request id %s", req.what, r.body, id)
		}
		if r.header.Get("X-Request-Id") != id {
			t.Errorf("%s: X-Request-Id %q, want %q", req.what, r.header.Get("X-Request-Id"), id)
		}
		lines := b.logLines("server: Request failed", id)
		if len(lines) != 1 {
			t.Fatalf("%s: %d log lines \"server: Request failed\" with request id %s, want 1:\n%s", req.what, len(lines), id, b.logs.Bytes())
		}
		cause, _ := lines[0]["err"].(string)
		if cause == "" || lines[0]["level"] != "ERROR" || lines[0]["path"] != req.path {
			t.Fatalf("%s: log line %v, want the cause at ERROR with the path", req.what, lines[0])
		}
		// The cause is the engine's own error: a closed SQLite handle, PostgreSQL's refusal.
		marker := map[string]string{"sqlite": "sql: database is closed", "postgres": "(SQLSTATE 5"}[engine]
		if !strings.Contains(cause, marker) {
			t.Errorf("%s: logged cause %q, want the database's error (%q)", req.what, cause, marker)
		}
		if strings.Contains(string(r.body), cause) || strings.Contains(string(r.body), marker) || strings.Contains(string(r.body), "database") {
			t.Errorf("%s: the response %s gives away the cause %q", req.what, r.body, cause)
		}
		t.Logf("%s: logged cause: %s", req.what, cause)
	}
	// The mutation's audit record could not be written either: that is logged with the entry.
	if lines := b.logLines("audit: Writing the audit record failed", "internal-"+engine+"-create"); len(lines) != 1 ||
		lines[0]["action"] != "crd.create" || lines[0]["result"] != "failed" || lines[0]["err"] == "" {
		t.Errorf("audit failure log lines: %v", lines)
	}

	id := "internal-" + engine + "-health"
	r = b.do("GET", "/health", "", nil, "X-Request-Id", id)
	expect(t, "health with the database stopped", r, http.StatusServiceUnavailable)
	var h api.HealthResponse
	r.json(t, &h)
	if h.Status != "degraded" || h.Database != "unreachable" || h.Engine != engine {
		t.Errorf("health: %s, want degraded with the database unreachable", r.body)
	}
	lines := b.logLines("server: Database does not answer", id)
	if len(lines) != 1 || !strings.Contains(lines[0]["err"].(string), engine+" store: ping") {
		t.Fatalf("health log lines with request id %s: %v", id, lines)
	}
	if strings.Contains(string(r.body), lines[0]["err"].(string)) {
		t.Errorf("health gives away the cause: %s", r.body)
	}
}
