package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

const indexHTML = `<!doctype html><html><head><script type="module" src="/assets/index-3f2a.js"></script></head><body><div id="root"></div></body></html>`

func built() fstest.MapFS {
	return fstest.MapFS{
		"index.html":            {Data: []byte(indexHTML)},
		"favicon.svg":           {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
		"assets/index-3f2a.js":  {Data: []byte(`console.log("ui")`)},
		"assets/index-9c1b.css": {Data: []byte(`body{margin:0}`)},
	}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, h http.Handler, method, target string, hdr ...string) answer {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{rec.Code, rec.Result().Header, string(body)}
}

// strictHeaders fails unless a carries the UI's security headers.
func strictHeaders(t *testing.T, what string, a answer) {
	t.Helper()
	if got := a.header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
		t.Errorf("%s: Content-Security-Policy %q", what, got)
	}
	for _, d := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'self'", "connect-src 'self'"} {
		if !strings.Contains(a.header.Get("Content-Security-Policy"), d) {
			t.Errorf("%s: the policy lacks %s", what, d)
		}
	}
	if strings.Contains(a.header.Get("Content-Security-Policy"), "unsafe") {
		t.Errorf("%s: the policy allows something unsafe", what)
	}
	if a.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", what, a.header.Get("X-Content-Type-Options"))
	}
}

func TestHandlerServesFilesAndFallsBack(t *testing.T) {
	h := Handler(built())
	cases := []struct {
		target, wantBody, wantCache, wantType string
		status                                int
	}{
		{"/", indexHTML, cacheRevalidate, "text/html; charset=utf-8", 200},
		{"/index.html", indexHTML, cacheRevalidate, "text/html; charset=utf-8", 200},
		{"/assets/index-3f2a.js", `console.log("ui")`, cacheImmutable, "text/javascript; charset=utf-8", 200},
		{"/assets/index-9c1b.css", `body{margin:0}`, cacheImmutable, "text/css; charset=utf-8", 200},
		{"/favicon.svg", `<svg xmlns="http://www.w3.org/2000/svg"/>`, cacheRevalidate, "image/svg+xml", 200},
		// Deep links are the application's: index.html, revalidated.
		{"/deployments/8d0c?status=Deploying", indexHTML, cacheRevalidate, "text/html; charset=utf-8", 200},
		{"/login", indexHTML, cacheRevalidate, "text/html; charset=utf-8", 200},
		{"/fleet/", indexHTML, cacheRevalidate, "text/html; charset=utf-8", 200},
		{"/nested/../fleet", indexHTML, cacheRevalidate, "text/html; charset=utf-8", 200},
	}
	for _, c := range cases {
		a := get(t, h, "GET", c.target)
		if a.status != c.status || a.body != c.wantBody {
			t.Errorf("GET %s: %d %q, want %d %q", c.target, a.status, a.body, c.status, c.wantBody)
		}
		if got := a.header.Get("Cache-Control"); got != c.wantCache {
			t.Errorf("GET %s: Cache-Control %q, want %q", c.target, got, c.wantCache)
		}
		if got := a.header.Get("Content-Type"); got != c.wantType {
			t.Errorf("GET %s: Content-Type %q, want %q", c.target, got, c.wantType)
		}
		if a.header.Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", c.target)
		}
		strictHeaders(t, "GET "+c.target, a)
	}
}

func TestHandlerNeverFallsBackForAssetsOrAPI(t *testing.T) {
	h := Handler(built())
	for _, target := range []string{"/assets/index-0000.js", "/assets/", "/assets", "/assets/sub/x.css", "/api/v1/nothing", "/api", "/api/"} {
		a := get(t, h, "GET", target)
		if a.status != http.StatusNotFound || strings.Contains(a.body, "<div id=\"root\">") {
			t.Errorf("GET %s: %d %q, want a 404 that is not index.html", target, a.status, a.body)
		}
		if a.header.Get("Cache-Control") == cacheImmutable {
			t.Errorf("GET %s: a 404 cached as immutable", target)
		}
		strictHeaders(t, "GET "+target, a)
	}
}

func TestHandlerMethods(t *testing.T) {
	h := Handler(built())
	a := get(t, h, "HEAD", "/assets/index-3f2a.js")
	if a.status != 200 || a.body != "" || a.header.Get("Content-Length") != "17" || a.header.Get("Cache-Control") != cacheImmutable {
		t.Errorf("HEAD: %d %q %v", a.status, a.body, a.header)
	}
	strictHeaders(t, "HEAD", a)
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		a := get(t, h, m, "/deployments")
		if a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /deployments: %d Allow %q", m, a.status, a.header.Get("Allow"))
		}
		strictHeaders(t, m, a)
	}
}

func TestHandlerRevalidates(t *testing.T) {
	h := Handler(built())
	first := get(t, h, "GET", "/")
	again := get(t, h, "GET", "/deployments", "If-None-Match", first.header.Get("ETag"))
	if again.status != http.StatusNotModified || again.body != "" {
		t.Fatalf("revalidated index: %d %q", again.status, again.body)
	}
	strictHeaders(t, "304", again)
	if a := get(t, h, "GET", "/assets/index-3f2a.js", "If-None-Match", first.header.Get("ETag")); a.status != 200 {
		t.Fatalf("another file's ETag matched: %d", a.status)
	}
}

// Without a build (a plain go build) every page says so and how to build it; assets stay 404.
func TestHandlerWithoutBuild(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{"empty": {}, "only .keep": {".keep": {}}} {
		h := Handler(fsys)
		for _, target := range []string{"/", "/fleet", "/login"} {
			a := get(t, h, "GET", target)
			if a.status != 200 || !strings.Contains(a.body, NotBuilt) || !strings.Contains(a.body, "make build") ||
				!strings.Contains(a.body, "cd web &amp;&amp; npm ci &amp;&amp; npm run build") {
				t.Errorf("%s GET %s: %d %q", name, target, a.status, a.body)
			}
			if strings.Contains(a.body, "<script") || strings.Contains(a.body, "<style") || strings.Contains(a.body, "style=") {
				t.Errorf("%s GET %s: the page has inline script or style, which the policy forbids", name, target)
			}
			if a.header.Get("Content-Type") != "text/html; charset=utf-8" || a.header.Get("Cache-Control") != cacheRevalidate {
				t.Errorf("%s GET %s: %v", name, target, a.header)
			}
			strictHeaders(t, name+" "+target, a)
		}
		if a := get(t, h, "GET", "/assets/index-3f2a.js"); a.status != http.StatusNotFound {
			t.Errorf("%s: a missing asset: %d", name, a.status)
		}
	}
}

// The embedded directory always exists: with only .keep in it, the binary serves the page above.
func TestEmbedded(t *testing.T) {
	if _, err := Dist().Open("."); err != nil {
		t.Fatalf("the embedded dist: %v", err)
	}
	a := get(t, New(), "GET", "/")
	if Built(Dist()) {
		if strings.Contains(a.body, NotBuilt) {
			t.Fatal("a built UI serves the not-built page")
		}
	} else if !strings.Contains(a.body, NotBuilt) {
		t.Fatalf("without a build: %q", a.body)
	}
	strictHeaders(t, "embedded", a)
}
