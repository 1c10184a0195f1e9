package server

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
)

// roleMatrix is the design's table: who may call what. Every route must have a row (the test
// fails on a route without one), so a new endpoint cannot ship without deciding its roles.
var roleMatrix = map[string][]auth.Role{
	"GET /health":                           nil, // public
	"GET /api/v1/openapi.json":              {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"POST /api/v1/operators":                {auth.Admin, auth.Operator},
	"GET /api/v1/operators":                 {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/operators/{name}":          {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"PATCH /api/v1/operators/{name}":        {auth.Admin, auth.Operator},
	"DELETE /api/v1/operators/{name}":       {auth.Admin},
	"POST /api/v1/operators/{name}/refresh": {auth.Admin, auth.Operator},
	"POST /api/v1/clusters":                 {auth.Admin},
	"GET /api/v1/clusters":                  {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/clusters/{name}":           {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/clusters/{name}/health":    {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"DELETE /api/v1/clusters/{name}":        {auth.Admin},
	"POST /api/v1/crds":                     {auth.Admin, auth.Operator},
	"GET /api/v1/crds":                      {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/crds/{name}":               {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"POST /api/v1/crds/{name}/validate":     {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"POST /api/v1/crds/{name}/approve":      {auth.Admin},
	"GET /api/v1/audit":                     {auth.Admin},

	"POST /api/v1/notifications/channels":             {auth.Admin},
	"GET /api/v1/notifications/channels":              {auth.Admin},
	"GET /api/v1/notifications/channels/{name}":       {auth.Admin},
	"PATCH /api/v1/notifications/channels/{name}":     {auth.Admin},
	"DELETE /api/v1/notifications/channels/{name}":    {auth.Admin},
	"POST /api/v1/notifications/channels/{name}/test": {auth.Admin},
	"GET /api/v1/notifications":                       {auth.Admin, auth.Operator},
	"GET /api/v1/notifications/{id}":                  {auth.Admin, auth.Operator},

	"POST /api/v1/deployments":                               {auth.Admin, auth.Operator},
	"GET /api/v1/deployments":                                {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/deployments/{id}":                           {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"DELETE /api/v1/deployments/{id}":                        {auth.Admin, auth.Operator},
	"POST /api/v1/deployments/{id}/rollback":                 {auth.Admin},
	"GET /api/v1/deployments/{id}/rollback-status":           {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"POST /api/v1/deployments/{id}/switch":                   {auth.Admin, auth.Operator},
	"POST /api/v1/deployments/{id}/pause":                    {auth.Admin, auth.Operator},
	"POST /api/v1/deployments/{id}/resume":                   {auth.Admin, auth.Operator},
	"GET /api/v1/deployments/{id}/events":                    {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/approvals":                                  {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"POST /api/v1/approvals/{id}/approve":                    {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"POST /api/v1/approvals/{id}/reject":                     {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/operators/{name}/health":                    {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/clusters/{cluster}/operators/{name}/health": {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},

	// The web UI's (issue 20).
	"GET /api/v1/whoami":                          {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/ui/config":                       nil, // public
	"POST /api/v1/session":                        nil, // public: the ticket is the credential
	"DELETE /api/v1/session":                      {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/fleet":                           {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/crds/{name}/revisions/{version}": {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/crds/{name}/diff":                {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},

	// Analyses (issue 27 §2).
	"POST /api/v1/analysis-templates":           {auth.Admin},
	"GET /api/v1/analysis-templates":            {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"GET /api/v1/analysis-templates/{name}":     {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"PUT /api/v1/analysis-templates/{name}":     {auth.Admin},
	"DELETE /api/v1/analysis-templates/{name}":  {auth.Admin},
	"PUT /api/v1/clusters/{name}/prometheus":    {auth.Admin},
	"GET /api/v1/clusters/{name}/prometheus":    {auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner},
	"DELETE /api/v1/clusters/{name}/prometheus": {auth.Admin},
}

var allRoles = []auth.Role{auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwnerOf("Production")}

func TestRoleMatrix(t *testing.T) {
	forEngine(t, testRoleMatrix)
}

func testRoleMatrix(t *testing.T, engine string) {
	b := setup(t, engine)
	routes := (&Server{}).routes()
	for _, rt := range routes {
		key := rt.Method + " " + rt.Pattern
		allowed, ok := roleMatrix[key]
		if !ok {
			t.Errorf("route %s has no row in the role matrix", key)
			continue
		}
		if rt.Public != (allowed == nil) {
			t.Errorf("route %s: public %v, matrix says %v", key, rt.Public, allowed)
		}
		path := pathParam.ReplaceAllString(rt.Pattern, "nothing-here")
		if rt.Public {
			// Public: answered without a token (POST /session: refused for its missing body, or
			// without a session secret; never for want of a token).
			want := http.StatusOK
			if rt.Request != nil {
				want = http.StatusNotFound
			}
			expect(t, key+" without a token", b.do(rt.Method, path, "", nil), want)
			continue
		}
		r := b.do(rt.Method, path, "", nil)
		expect(t, key+" without a token", r, http.StatusUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", key)
		}
		for _, role := range allRoles {
			r := b.do(rt.Method, path, b.token("u-"+string(role), role), "{}")
			base := role
			if strings.HasPrefix(string(role), string(auth.EnvironmentOwner)) {
				base = auth.EnvironmentOwner
			}
			if want := slices.Contains(allowed, base); want == (r.status == http.StatusForbidden) {
				t.Errorf("%s as %s: status %d (allowed: %v): %s", key, role, r.status, want, r.body)
			}
		}
	}
	if len(routes) != len(roleMatrix) {
		t.Errorf("%d routes, %d rows in the matrix", len(routes), len(roleMatrix))
	}
}

func TestTokens(t *testing.T) {
	forEngine(t, testTokens)
}

func testTokens(t *testing.T, engine string) {
	b := setup(t, engine)
	now := time.Now()
	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := jwt.MapClaims{"sub": "alice", "roles": []string{"Admin"}, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "iss": "slipway-manager"}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	cases := map[string]string{
		"expired":        sign(jwt.SigningMethodHS256, b.secret, with("exp", now.Add(-time.Hour).Unix())),
		"no exp":         sign(jwt.SigningMethodHS256, b.secret, with("exp", nil)),
		"wrong secret":   sign(jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), good),
		"alg none":       sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, good),
		"HS512":          sign(jwt.SigningMethodHS512, b.secret, good),
		"not yet valid":  sign(jwt.SigningMethodHS256, b.secret, with("nbf", now.Add(time.Hour).Unix())),
		"forged payload": forge(t, sign(jwt.SigningMethodHS256, b.secret, with("roles", []string{"Viewer"}))),
		"garbage":        "not.a.token",
	}
	for name, tok := range cases {
		r := b.do("GET", "/api/v1/clusters", tok, nil)
		expect(t, name, r, http.StatusUnauthorized)
		if e := r.apiError(t); e.Code != api.CodeUnauthenticated || strings.Contains(string(r.body), tok) {
			t.Errorf("%s: %s", name, r.body)
		}
	}
	r := b.do("GET", "/api/v1/clusters", sign(jwt.SigningMethodHS256, b.secret, good), nil, "X-Request-Id", "req-tokens-1")
	expect(t, "valid", r, http.StatusOK)
	// The access log line names the route, the caller and the request.
	var logged bool
	for _, line := range strings.Split(string(b.logs.Bytes()), "\n") {
		if strings.Contains(line, `"message":"server: Request"`) && strings.Contains(line, `"requestId":"req-tokens-1"`) {
			logged = strings.Contains(line, `"userId":"alice"`) && strings.Contains(line, `"route":"GET /api/v1/clusters"`)
		}
	}
	if !logged {
		t.Fatalf("no access log line with the user and route: %s", b.logs.Bytes())
	}
	expect(t, "basic auth", b.do("GET", "/api/v1/clusters", "", nil, "Authorization", "Basic YWxpY2U6cHc="), http.StatusUnauthorized)
}

// forge swaps a signed token's payload for one claiming Admin, keeping the signature.
func forge(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	payload := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "mallory", "roles": []string{"Admin"},
		"exp": time.Now().Add(time.Hour).Unix()})
	s, err := payload.SigningString()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(s, ".")[0] + "." + strings.Split(s, ".")[1] + "." + parts[2]
}

func TestRateLimit(t *testing.T) {
	forEngine(t, testRateLimit)
}

func testRateLimit(t *testing.T, engine string) {
	b := setup(t, engine, withRules(ratelimit.DefaultRules()))
	admin, other := b.admin(), b.token("bob", auth.Admin)
	// POST /clusters: 5 a minute per user. Bad bodies are answered 400 and still count.
	for i := range 5 {
		expect(t, "within the limit", b.do("POST", "/api/v1/clusters", admin, "{}"), http.StatusBadRequest)
		_ = i
	}
	r := b.do("POST", "/api/v1/clusters", admin, "{}")
	expect(t, "over the limit", r, http.StatusTooManyRequests)
	if ra := r.header.Get("Retry-After"); !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(ra) {
		t.Fatalf("Retry-After %q", ra)
	}
	if e := r.apiError(t); e.Code != api.CodeRateLimited {
		t.Fatalf("429 body: %s", r.body)
	}
	expect(t, "another user", b.do("POST", "/api/v1/clusters", other, "{}"), http.StatusBadRequest)
	expect(t, "another route", b.do("GET", "/api/v1/crds", admin, nil), http.StatusOK)
}

func TestBadRequests(t *testing.T) {
	forEngine(t, testBadRequests)
}

func testBadRequests(t *testing.T, engine string) {
	b := setup(t, engine)
	admin := b.admin()
	before := b.counts()
	big := `{"name":"x","environment":"Dev","kubeconfig":"` + strings.Repeat("a", 5<<20) + `"}`
	r := b.do("POST", "/api/v1/clusters", admin, big)
	expect(t, "oversized", r, http.StatusRequestEntityTooLarge)
	r.apiError(t)
	expect(t, "not JSON", b.do("POST", "/api/v1/clusters", admin, "name=x", "Content-Type", "application/x-www-form-urlencoded"), http.StatusUnsupportedMediaType)
	expectInvalid(t, "unknown field", b.do("POST", "/api/v1/clusters", admin, `{"name":"x","env":"Dev"}`), "env")
	expectInvalid(t, "malformed", b.do("POST", "/api/v1/operators", admin, `{"name":`), "")
	expectInvalid(t, "wrong type", b.do("POST", "/api/v1/operators", admin, `{"name": 7}`), "name")
	r = b.do("GET", "/api/v1/nothing", admin, nil)
	expect(t, "unknown route", r, http.StatusNotFound)
	r.apiError(t)
	r = b.do("PUT", "/api/v1/clusters", admin, "{}")
	expect(t, "wrong method", r, http.StatusMethodNotAllowed)
	if r.apiError(t); !strings.Contains(r.header.Get("Allow"), "GET") {
		t.Fatalf("Allow: %q", r.header.Get("Allow"))
	}
	if after := b.counts(); after != before {
		t.Fatalf("rejected requests wrote to the store: %+v, then %+v", before, after)
	}
	r = b.do("GET", "/health", "", nil)
	expect(t, "health", r, http.StatusOK)
	var h api.HealthResponse
	r.json(t, &h)
	if h.Status != "ok" || h.Database != "ok" || h.Engine != engine {
		t.Fatalf("health: %+v", h)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
	r = b.do("GET", "/health", "", nil, "X-Request-Id", "abc-123")
	if r.header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("request id not kept: %q", r.header.Get("X-Request-Id"))
	}
}
