package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/ui"
)

const testIndex = `<!doctype html><html><head><script type="module" src="/assets/app-1f2e.js"></script></head><body><div id="root"></div></body></html>`

func testUI() http.Handler {
	return ui.Handler(fstest.MapFS{
		"index.html":         {Data: []byte(testIndex)},
		"assets/app-1f2e.js": {Data: []byte(`export const app = 1`)},
	})
}

func withUI(h http.Handler) func(*setupOpts) {
	return withDeps(func(_ *bundle, d *Deps) { d.UI = h })
}

// uiPage fails unless r is a UI answer: status, the strict policy and nosniff.
func uiPage(t *testing.T, what string, r response, status int) {
	t.Helper()
	expect(t, what, r, status)
	if r.header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("%s: headers %v", what, r.header)
	}
}

// TestWebUI serves the UI through the real server (TLS, the middleware): pages and deep links
// are index.html, assets are cached for good, a missing asset is a 404 and never index.html;
// the API and /health keep their routes, and an unknown API path is still the JSON 404.
func TestWebUI(t *testing.T) {
	b := setup(t, "sqlite", withUI(testUI()))
	for _, path := range []string{"/", "/fleet", "/deployments/8d0c?status=Deploying", "/login", "/crds/widgets.example.com/diff"} {
		r := b.do("GET", path, "", nil)
		uiPage(t, path, r, http.StatusOK)
		if string(r.body) != testIndex || r.header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("GET %s: %q cache %q", path, r.body, r.header.Get("Cache-Control"))
		}
	}
	r := b.do("GET", "/assets/app-1f2e.js", "", nil)
	uiPage(t, "asset", r, http.StatusOK)
	if r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("asset headers: %v", r.header)
	}
	r = b.do("GET", "/assets/app-0000.js", "", nil)
	uiPage(t, "missing asset", r, http.StatusNotFound)
	if strings.Contains(string(r.body), "root") {
		t.Fatalf("a missing asset answered index.html: %s", r.body)
	}
	uiPage(t, "POST a page", b.do("POST", "/fleet", "", "{}"), http.StatusMethodNotAllowed)

	// The API keeps priority, and its unknown paths stay JSON.
	for _, path := range []string{"/api/v1/nothing", "/api", "/api/", "/api/v2/clusters", "/health/x"} {
		r := b.do("GET", path, b.admin(), nil)
		expect(t, path, r, http.StatusNotFound)
		if e := r.apiError(t); !strings.Contains(e.Message, "no route") || r.header.Get("Content-Security-Policy") != "" {
			t.Fatalf("GET %s: %s %v", path, r.body, r.header)
		}
	}
	if e := b.do("GET", "/api/v1/operators", "", nil).apiError(t); e.Code != api.CodeUnauthenticated {
		t.Fatalf("the API without a token: %+v", e)
	}
	expect(t, "an API route", b.do("GET", "/api/v1/operators", b.viewer(), nil), http.StatusOK)
	var h api.HealthResponse
	r = b.do("GET", "/health", "", nil)
	if r.json(t, &h); r.status != http.StatusOK || h.Status != "ok" {
		t.Fatalf("/health: %d %s", r.status, r.body)
	}
	if !logged(b, `"route":"ui"`, `"path":"/fleet"`, `"status":200`) {
		t.Fatalf("no access log line for the UI page:\n%s", b.logs.Bytes())
	}
}

// Without a UI (serve --ui=false) a page is the API's JSON 404; the binary's own embedded UI
// (built or not) is served with the same headers.
func TestWebUIOffAndEmbedded(t *testing.T) {
	off := setup(t, "sqlite")
	r := off.do("GET", "/fleet", "", nil)
	expect(t, "no UI", r, http.StatusNotFound)
	if e := r.apiError(t); e.Code != api.CodeNotFound {
		t.Fatalf("no UI: %s", r.body)
	}
	b := setup(t, "sqlite", withUI(ui.New()))
	r = b.do("GET", "/", "", nil)
	uiPage(t, "embedded", r, http.StatusOK)
	if built := ui.Built(ui.Dist()); built == strings.Contains(string(r.body), ui.NotBuilt) {
		t.Fatalf("embedded UI (built %v): %s", built, r.body)
	}
}

// TestCompression: an answer of 1 KiB or more goes gzipped to a client that accepts it, the
// same bytes once unpacked, and as it is to one that does not.
func TestCompression(t *testing.T) {
	b := setup(t, "sqlite", withUI(testUI()))
	plain := b.do("GET", "/api/v1/openapi.json", b.viewer(), nil, "Accept-Encoding", "identity")
	expect(t, "plain", plain, http.StatusOK)
	if ce := plain.header.Get("Content-Encoding"); ce != "" || len(plain.body) < 1024 {
		t.Fatalf("identity: Content-Encoding %q, %d bytes", ce, len(plain.body))
	}
	packed := b.do("GET", "/api/v1/openapi.json", b.viewer(), nil, "Accept-Encoding", "gzip")
	expect(t, "gzip", packed, http.StatusOK)
	if packed.header.Get("Content-Encoding") != "gzip" || !strings.Contains(packed.header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip: headers %v", packed.header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed.body))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(body, plain.body) {
		t.Fatalf("unpacked %d bytes (%v), want the %d plain ones", len(body), err, len(plain.body))
	}
	if len(packed.body)*3 > len(plain.body) {
		t.Errorf("gzip: %d bytes of %d", len(packed.body), len(plain.body))
	}
	// A small answer is not worth it.
	small := b.do("GET", "/health", "", nil, "Accept-Encoding", "gzip")
	if ce := small.header.Get("Content-Encoding"); ce != "" {
		t.Errorf("/health (%d bytes) sent with Content-Encoding %q", len(small.body), ce)
	}
}
