package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// designRoutes are the routes, exactly; plus the document itself.
var designRoutes = []string{
	"GET /health",
	"GET /api/v1/openapi.json",
	"POST /api/v1/operators", "GET /api/v1/operators", "GET /api/v1/operators/{name}",
	"PATCH /api/v1/operators/{name}", "DELETE /api/v1/operators/{name}", "POST /api/v1/operators/{name}/refresh",
	"POST /api/v1/clusters", "GET /api/v1/clusters", "GET /api/v1/clusters/{name}",
	"GET /api/v1/clusters/{name}/health", "DELETE /api/v1/clusters/{name}",
	"POST /api/v1/crds", "GET /api/v1/crds", "GET /api/v1/crds/{name}",
	"POST /api/v1/crds/{name}/validate", "POST /api/v1/crds/{name}/approve",
	"GET /api/v1/audit",
	"POST /api/v1/deployments", "GET /api/v1/deployments", "GET /api/v1/deployments/{id}",
	"POST /api/v1/deployments/{id}/rollback", "GET /api/v1/deployments/{id}/rollback-status",
	"DELETE /api/v1/deployments/{id}", "POST /api/v1/deployments/{id}/switch", "GET /api/v1/deployments/{id}/events",
	"POST /api/v1/deployments/{id}/pause", "POST /api/v1/deployments/{id}/resume",
	"GET /api/v1/approvals", "POST /api/v1/approvals/{id}/approve", "POST /api/v1/approvals/{id}/reject",
	"GET /api/v1/operators/{name}/health", "GET /api/v1/clusters/{cluster}/operators/{name}/health",
	"POST /api/v1/notifications/channels", "GET /api/v1/notifications/channels", "GET /api/v1/notifications/channels/{name}",
	"PATCH /api/v1/notifications/channels/{name}", "DELETE /api/v1/notifications/channels/{name}",
	"POST /api/v1/notifications/channels/{name}/test", "GET /api/v1/notifications", "GET /api/v1/notifications/{id}",
	// The web UI's (issue 20).
	"GET /api/v1/whoami", "GET /api/v1/ui/config", "POST /api/v1/session", "DELETE /api/v1/session", "GET /api/v1/fleet",
	"GET /api/v1/crds/{name}/revisions/{version}", "GET /api/v1/crds/{name}/diff",
	// Analyses with a real Prometheus (issue 27 §2).
	"POST /api/v1/analysis-templates", "GET /api/v1/analysis-templates", "GET /api/v1/analysis-templates/{name}",
	"PUT /api/v1/analysis-templates/{name}", "DELETE /api/v1/analysis-templates/{name}",
	"PUT /api/v1/clusters/{name}/prometheus", "GET /api/v1/clusters/{name}/prometheus", "DELETE /api/v1/clusters/{name}/prometheus",
}

// TestOpenAPI checks the served document both ways: every operation it lists is served (not the
// mux's 404/405), and every served route is in it, exactly the design's list.
func TestOpenAPI(t *testing.T) {
	forEngine(t, testOpenAPI)
}

func testOpenAPI(t *testing.T, engine string) {
	b := setup(t, engine)
	r := b.do("GET", "/api/v1/openapi.json", b.viewer(), nil)
	expect(t, "openapi.json", r, http.StatusOK)
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("invalid document: %v", err)
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			documented = append(documented, method+" "+path)
			if op.Responses.Value("400") == nil && op.RequestBody != nil {
				t.Errorf("%s %s takes a body and documents no 400", method, path)
			}
			// Served: the route answers with something other than "no such route".
			res := b.do(method, pathParam.ReplaceAllString(path, "x"), b.admin(), "{}")
			if res.status == http.StatusMethodNotAllowed || strings.Contains(string(res.body), "no route") {
				t.Errorf("%s %s is documented but not served: %d %s", method, path, res.status, res.body)
			}
		}
	}
	var served []string
	for _, rt := range (&Server{}).routes() {
		served = append(served, rt.Method+" "+rt.Pattern)
	}
	want := slices.Clone(designRoutes)
	slices.Sort(want)
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, want) {
		t.Errorf("documented operations:\n%v\nwant the design's:\n%v", documented, want)
	}
	if !slices.Equal(served, want) {
		t.Errorf("served routes:\n%v\nwant the design's:\n%v", served, want)
	}
	// And nothing else is served.
	for _, probe := range []string{"GET /api/v1/deployments/x/history", "PUT /api/v1/approvals/x", "POST /api/v1/clusters/x", "GET /api/v2/clusters", "GET /metrics"} {
		m, p, _ := strings.Cut(probe, " ")
		if res := b.do(m, p, b.admin(), nil); res.status != http.StatusNotFound && res.status != http.StatusMethodNotAllowed {
			t.Errorf("%s is served: %d", probe, res.status)
		}
	}
	if doc.Components.SecuritySchemes["bearer"] == nil {
		t.Error("no bearer security scheme")
	}
}
