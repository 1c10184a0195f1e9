// Package ui serves the manager's web UI: the single-page application web/ builds into dist/
// (Vite, `make build` or `cd web && npm ci && npm run build`), embedded in the binary. A binary
// built without it (a plain `go build`) serves a page that says how to build it.
package ui

import (
	"embed"
	"io/fs"
)

// dist holds the UI build; only dist/.keep is committed, so a plain build embeds no UI.
//
//go:embed all:dist
var dist embed.FS

// Dist is the embedded UI build (index.html, assets/…), or an empty directory when the binary was
// built without it.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("ui: " + err.Error()) // "dist" is a valid path: it cannot fail
	}
	return sub
}

// Built reports whether fsys holds a UI build (an index.html).
func Built(fsys fs.FS) bool {
	fi, err := fs.Stat(fsys, "index.html")
	return err == nil && !fi.IsDir()
}
