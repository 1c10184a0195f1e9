package server

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// TestOperatorPrivateChartSource: an operator whose Helm repository wants HTTP Basic (and
// later one that wants a Bearer token) is refused without or with wrong credentials, registered
// with the right ones (sealed in the store, shown as set), refreshed with them (on demand and by
// the loop), and changed by PATCH to other credentials only after the source was read with
// them; null removes them. No secret is in any response, log line or audit record.
func TestOperatorPrivateChartSource(t *testing.T) {
	forEngine(t, testOperatorPrivateChartSource)
}

const (
	basicSecret = "s3cret-basic-pw-4711"
	tokenSecret = "s3cret-bearer-token-0815"
)

func testOperatorPrivateChartSource(t *testing.T, engine string) {
	b := setup(t, engine)
	repo := charttest.ServePrivateRepository(t, charttest.Auth{Username: "ci", Password: basicSecret}, widgetCharts()[:2]...)
	olga := b.token("olga", auth.Operator)
	register := func(creds string) response {
		return b.do("POST", "/api/v1/operators", olga, fmt.Sprintf(
			`{"name": "private", "namespace": "widget-system", "chart": {"repository": %q, "name": "widget-operator"%s}}`, repo.URL, creds))
	}
	e := expectInvalid(t, "without credentials", register(""), "chart.repository")
	if !strings.Contains(e.Message, "401") {
		t.Fatalf("registration without credentials: %q does not say the repository refused", e.Message)
	}
	expectInvalid(t, "wrong password", register(`, "credentials": {"username": "ci", "password": "nope"}`), "chart.repository")
	expectInvalid(t, "password and token", register(`, "credentials": {"username": "ci", "password": "a", "token": "b"}`), "chart.credentials")
	expectInvalid(t, "user alone", register(`, "credentials": {"username": "ci"}`), "chart.credentials")
	expectInvalid(t, "set is read-only", register(`, "credentials": {"username": "ci", "password": "x", "set": true}`), "chart.credentials")
	if _, err := b.store.OperatorGetByName(t.Context(), "private"); err == nil {
		t.Fatal("a refused registration stored the operator")
	}

	r := register(`, "credentials": {"username": "ci", "password": "` + basicSecret + `"}`)
	expect(t, "register with credentials", r, http.StatusCreated)
	var op api.Operator
	r.json(t, &op)
	if c := op.Chart.Credentials; c == nil || !c.Set || c.Username != "ci" || c.Password != "" || !slices.Equal(op.Versions, []string{"1.1.0", "1.0.0"}) {
		t.Fatalf("registered: %+v (credentials %+v)", op, op.Chart.Credentials)
	}
	stored, err := b.store.OperatorGetByName(t.Context(), "private")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := b.store.OperatorConfigGet(t.Context(), stored.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.CredentialsCiphertext) == 0 || cfg.KeyID == "" || bytes.Contains(cfg.CredentialsCiphertext, []byte(basicSecret)) {
		t.Fatalf("stored credentials are not sealed: key %q, %d bytes", cfg.KeyID, len(cfg.CredentialsCiphertext))
	}

	// Refresh reads the private source with the stored credentials: on demand and by the loop.
	repo.Add(t, widgetCharts()[2])
	if res := refreshOK(t, b, olga, "private", nil); !slices.Equal(res.Added, []string{"2.0.0"}) {
		t.Fatalf("refresh of the private source: %+v", res)
	}
	if res, err := b.srv.refresh.Refresh(t.Context(), stored, refresh.Options{}); err != nil || !res.NotModified {
		t.Fatalf("the loop's refresh of the private source: %+v, %v", res, err)
	}

	testPrivatePatch(t, b, repo, stored.ID)
	for what, text := range map[string]string{"responses": b.bodies.String(), "logs": b.logs.String(), "audit": auditText(t, b)} {
		for _, secret := range []string{basicSecret, tokenSecret} {
			if strings.Contains(text, secret) {
				t.Errorf("a secret is in the %s", what)
			}
		}
	}
}

func testPrivatePatch(t *testing.T, b *bundle, repo *charttest.Repository, id string) {
	olga := b.token("olga", auth.Operator)
	sealed := func() []byte {
		cfg, err := b.store.OperatorConfigGet(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.CredentialsCiphertext
	}
	before := sealed()
	// New credentials are tried on the source before anything is stored.
	expectInvalid(t, "patch to wrong credentials", b.do("PATCH", "/api/v1/operators/private", olga,
		`{"chart": {"credentials": {"username": "ci", "password": "wrong"}}}`), "chart.repository")
	expectInvalid(t, "remove credentials of a private source", b.do("PATCH", "/api/v1/operators/private", olga,
		`{"chart": {"credentials": null}}`), "chart.repository")
	if !bytes.Equal(sealed(), before) {
		t.Fatal("a refused PATCH changed the stored credentials")
	}

	r := b.do("PATCH", "/api/v1/operators/private", olga, `{"chart": {"credentials": "x"}}`)
	expect(t, "credentials not an object", r, http.StatusBadRequest)
	if e := r.apiError(t); !strings.Contains(e.Message, "chart.credentials") {
		t.Fatalf("credentials not an object: %q does not name the field", e.Message)
	}
	expectInvalid(t, "patch to half credentials", b.do("PATCH", "/api/v1/operators/private", olga,
		`{"chart": {"credentials": {"password": "x"}}}`), "chart.credentials")
	// Move to a repository that wants a token, with the token.
	other := charttest.ServePrivateRepository(t, charttest.Auth{Token: tokenSecret}, widgetCharts()...)
	r = b.do("PATCH", "/api/v1/operators/private", olga, fmt.Sprintf(`{"chart": {"repository": %q, "credentials": {"token": %q}}}`, other.URL, tokenSecret))
	expect(t, "patch to the token repository", r, http.StatusOK)
	var op api.Operator
	r.json(t, &op)
	if c := op.Chart.Credentials; c == nil || !c.Set || c.Token != "" || c.Username != "" || op.Chart.Repository != other.URL {
		t.Fatalf("after moving: %+v (credentials %+v)", op.Chart, op.Chart.Credentials)
	}
	if bytes.Equal(sealed(), before) {
		t.Fatal("the new credentials were not stored")
	}
	// A PATCH of the filter alone keeps the credentials (the source is read with them).
	expect(t, "patch the filter", b.do("PATCH", "/api/v1/operators/private", olga, `{"versions": ">=1.0.0"}`), http.StatusOK)

	// To a public repository, removing the credentials.
	public := charttest.ServeRepository(t, widgetCharts()...)
	r = b.do("PATCH", "/api/v1/operators/private", olga, fmt.Sprintf(`{"chart": {"repository": %q, "credentials": null}}`, public.URL))
	expect(t, "patch to a public repository", r, http.StatusOK)
	op = api.Operator{}
	r.json(t, &op)
	if op.Chart.Credentials != nil || len(sealed()) != 0 {
		t.Fatalf("credentials after removal: %+v, %d sealed bytes", op.Chart.Credentials, len(sealed()))
	}
	if repo.Refused() == 0 || other.Refused() != 0 {
		t.Fatalf("refusals: basic repository %d (want some), token repository %d (want none)", repo.Refused(), other.Refused())
	}
}

// auditText is the audit log as the API gives it.
func auditText(t *testing.T, b *bundle) string {
	t.Helper()
	r := b.do("GET", "/api/v1/audit?limit=500", b.admin(), nil)
	expect(t, "audit", r, http.StatusOK)
	var list api.AuditList
	r.json(t, &list)
	if len(list.Items) == 0 {
		t.Fatal("no audit records")
	}
	return string(r.body)
}

// TestOperatorDefaultValues: default values given at registration are shown by GET, replaced
// and removed by PATCH (without reading the source), and refused when not an object or too
// large.
func TestOperatorDefaultValues(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine)
		repo := charttest.ServeRepository(t, widgetCharts()[:1]...)
		olga := b.token("olga", auth.Operator)
		body := func(values string) string {
			return fmt.Sprintf(`{"name": "defaults", "namespace": "widget-system", "chart": {"repository": %q, "name": "widget-operator"}, "defaultValues": %s}`, repo.URL, values)
		}
		expectInvalid(t, "an array", b.do("POST", "/api/v1/operators", olga, body(`[1]`)), "defaultValues")
		big := `{"x": "` + strings.Repeat("a", MaxDefaultValuesBytes) + `"}`
		expectInvalid(t, "too large", b.do("POST", "/api/v1/operators", olga, body(big)), "defaultValues")
		expect(t, "register", b.do("POST", "/api/v1/operators", olga, body(`{"replicas": 2, "image": {"tag": "v1"}}`)), http.StatusCreated)
		values := func() string {
			var op api.Operator
			b.do("GET", "/api/v1/operators/defaults", b.viewer(), nil).json(t, &op)
			return string(op.DefaultValues)
		}
		if got := values(); got != `{"replicas":2,"image":{"tag":"v1"}}` {
			t.Fatalf("default values %s", got)
		}
		reads := repo.IndexReads()
		expect(t, "replace", b.do("PATCH", "/api/v1/operators/defaults", olga, `{"defaultValues": {"replicas": 3}}`), http.StatusOK)
		if got := values(); got != `{"replicas":3}` || repo.IndexReads() != reads {
			t.Fatalf("after replacing: %s (index reads %d → %d)", got, reads, repo.IndexReads())
		}
		expectInvalid(t, "patch a string", b.do("PATCH", "/api/v1/operators/defaults", olga, `{"defaultValues": "x"}`), "defaultValues")
		expect(t, "remove", b.do("PATCH", "/api/v1/operators/defaults", olga, `{"defaultValues": null}`), http.StatusOK)
		if got := values(); got != "" {
			t.Fatalf("after removing: %s", got)
		}
	})
}

// TestOpenAPIChartCredentials: PATCH's credentials are documented as the credentials object,
// nullable, not as the Go type that tells absent from null.
func TestOpenAPIChartCredentials(t *testing.T) {
	b := setup(t, "sqlite")
	doc := string(b.srv.openapi)
	if strings.Contains(doc, `"Present"`) || !strings.Contains(doc, "null removes them; left out keeps them") {
		t.Fatal("the OpenAPI document does not describe PATCH's chart.credentials as a nullable credentials object")
	}
}

// TestOperatorPrivateOCIRegistry: an operator in a registry behind htpasswd (the distribution
// registry) is refused without credentials, registered with them and refreshed with them.
func TestOperatorPrivateOCIRegistry(t *testing.T) {
	reg := registrytest.StartDistribution(t, registrytest.WithBasicAuth("pusher", "s3cret-oci-pw"))
	for _, files := range widgetCharts()[:2] {
		registrytest.PushChart(t, reg.Host, "charts/widget-operator", chartVersionOf(t, files), files, registrytest.WithPushAuth("pusher", "s3cret-oci-pw"))
	}
	b := setup(t, "sqlite", withPlainHTTP(reg.Host))
	olga := b.token("olga", auth.Operator)
	body := func(creds string) string {
		return fmt.Sprintf(`{"name": "oci-private", "namespace": "widget-system", "chart": {"repository": "oci://%s/charts", "name": "widget-operator"%s}}`, reg.Host, creds)
	}
	expectInvalid(t, "without credentials", b.do("POST", "/api/v1/operators", olga, body("")), "chart.repository")
	expectInvalid(t, "wrong credentials", b.do("POST", "/api/v1/operators", olga, body(`, "credentials": {"username": "pusher", "password": "nope"}`)), "chart.repository")
	r := b.do("POST", "/api/v1/operators", olga, body(`, "credentials": {"username": "pusher", "password": "s3cret-oci-pw"}`))
	expect(t, "register", r, http.StatusCreated)
	var op api.Operator
	r.json(t, &op)
	if !slices.Equal(op.Versions, []string{"1.1.0", "1.0.0"}) || op.Chart.Credentials == nil || op.Chart.Credentials.Username != "pusher" {
		t.Fatalf("registered %+v", op)
	}
	refreshOK(t, b, olga, "oci-private", nil)
	if strings.Contains(b.bodies.String()+b.logs.String(), "s3cret-oci-pw") {
		t.Fatal("the registry password is in a response or a log line")
	}
}

// chartVersionOf is the version of charttest's chart files.
func chartVersionOf(t *testing.T, files charttest.ChartFiles) string {
	t.Helper()
	for _, v := range charttest.Versions {
		if strings.Contains(files["Chart.yaml"], "\nversion: "+v.Version+"\n") {
			return v.Version
		}
	}
	t.Fatal("no version in Chart.yaml")
	return ""
}
