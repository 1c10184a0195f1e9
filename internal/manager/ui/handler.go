package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// ContentSecurityPolicy is sent with every UI response when the UI talks to no other origin:
// scripts, styles, connections and frames from the manager's own origin only, so no inline
// <script> or style element runs and no page frames the UI. img-src adds data: for the small
// images Vite inlines into the stylesheets.
var ContentSecurityPolicy = Policy()

// Policy is ContentSecurityPolicy with connect-src also allowing the given origins: the OIDC
// issuer the UI signs in at (its discovery document and token endpoint are fetched by the page).
func Policy(connectSrc ...string) string {
	connect := strings.Join(append([]string{"'self'"}, connectSrc...), " ")
	return "default-src 'self'; base-uri 'self'; connect-src " + connect + "; frame-ancestors 'none'; " +
		"img-src 'self' data:; object-src 'none'; script-src 'self'"
}

// Cache-Control values: content-hashed assets forever, everything else revalidated each time.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// Handler serves the single-page application in fsys (index.html at its root, Vite's
// content-hashed files under assets/), GET and HEAD only:
//   - an existing file is served as it is (assets/* cached for a year as immutable, others
//     revalidated);
//   - a missing assets/* or api/* path is a 404, never index.html;
//   - any other path is index.html, revalidated (the application routes it: deep links);
//   - when fsys has no index.html, every page is one that says the UI was not built into this
//     binary and how to build it.
//
// Every answer carries the Content-Security-Policy, X-Content-Type-Options: nosniff and
// Referrer-Policy: no-referrer.
// connectSrc are origins the page may also connect to (Policy).
func Handler(fsys fs.FS, connectSrc ...string) http.Handler {
	return &handler{fsys: fsys, built: Built(fsys), csp: Policy(connectSrc...)}
}

// New serves the UI embedded in the binary (Dist).
func New(connectSrc ...string) http.Handler { return Handler(Dist(), connectSrc...) }

type handler struct {
	fsys  fs.FS
	built bool
	csp   string
	// files caches each file read: content and ETag (the files never change while serving).
	files sync.Map // name → *file
}

type file struct {
	data []byte
	etag string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", h.csp)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, r.Method+" is not allowed on the web UI's pages; allowed: GET, HEAD", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	if f, ok := h.open(name); ok {
		cache := cacheRevalidate
		if strings.HasPrefix(name, "assets/") {
			cache = cacheImmutable
		}
		h.serve(w, r, name, f, cache)
		return
	}
	if name == "assets" || name == "api" || strings.HasPrefix(name, "assets/") || strings.HasPrefix(name, "api/") {
		hdr.Set("Cache-Control", cacheRevalidate)
		http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
		return
	}
	if !h.built {
		h.serve(w, r, "index.html", notBuilt, cacheRevalidate)
		return
	}
	index, ok := h.open("index.html")
	if !ok {
		http.Error(w, "the web UI's index.html cannot be read", http.StatusInternalServerError)
		return
	}
	h.serve(w, r, "index.html", index, cacheRevalidate)
}

// open returns the regular file name of fsys (false for a directory, a missing or an unreadable file).
func (h *handler) open(name string) (*file, bool) {
	if v, ok := h.files.Load(name); ok {
		return v.(*file), true
	}
	if !fs.ValidPath(name) {
		return nil, false
	}
	fi, err := fs.Stat(h.fsys, name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := fs.ReadFile(h.fsys, name)
	if err != nil {
		return nil, false
	}
	f := newFile(data)
	h.files.Store(name, f)
	return f, true
}

func newFile(data []byte) *file {
	sum := sha256.Sum256(data)
	return &file{data: data, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
}

// serve writes f (HEAD, Range and If-None-Match handled by http.ServeContent); its Content-Type
// follows name's extension.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, name string, f *file, cache string) {
	w.Header().Set("Cache-Control", cache)
	w.Header().Set("ETag", f.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}

// NotBuilt is what the page served without a UI build says first.
const NotBuilt = "The web UI was not built into this binary"

// notBuilt is the page served when the binary holds no UI build: plain HTML, no script and no
// inline style (the Content-Security-Policy forbids both).
var notBuilt = newFile([]byte(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>slipway manager: web UI not built</title>
</head>
<body>
<main>
<h1>slipway manager</h1>
<p><strong>` + NotBuilt + `.</strong> The API works as usual: see <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</p>
<p>To serve the UI, build the manager with it:</p>
<ul>
<li><code>make build</code> (builds the UI, then every binary into <code>bin/</code>), or</li>
<li><code>cd web &amp;&amp; npm ci &amp;&amp; npm run build</code> (writes <code>internal/manager/ui/dist</code>), then rebuild the manager (<code>go build ./cmd/manager</code>).</li>
</ul>
<p>docs/troubleshooting.md, "The UI says it was not built", has more.</p>
</main>
</body>
</html>
`))
