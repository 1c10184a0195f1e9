package server

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// committedOpenAPI is the document the web UI's client is generated from.
var committedOpenAPI = filepath.Join("..", "..", "..", "api", "manager", "openapi.json")

// TestCommittedOpenAPI: api/manager/openapi.json is exactly what the server serves (plus the
// final newline `manager openapi` prints), and building the document twice gives the same bytes.
func TestCommittedOpenAPI(t *testing.T) {
	b := setup(t, "sqlite")
	r := b.do("GET", "/api/v1/openapi.json", b.viewer(), nil)
	expect(t, "openapi.json", r, http.StatusOK)
	committed, err := os.ReadFile(committedOpenAPI)
	if err != nil {
		t.Fatalf("reading the committed document: %v (run make generate)", err)
	}
	if !bytes.Equal(committed, append(bytes.Clone(r.body), '\n')) {
		t.Fatalf("api/manager/openapi.json differs from the document the server serves: run make generate and commit it")
	}
	again, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, r.body) {
		t.Fatal("OpenAPI() differs from the served document: the document is not deterministic")
	}
}
