//go:build browser || e2e

package browsertest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/auth/oidctest"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/manager/ui"
)

// oidcClient is the web UI's client id at the test issuer.
const oidcClient = "slipway-cockpit"

// TestOIDC signs in through an OIDC issuer (oidctest, plain HTTP on loopback) with the
// authorization-code flow and PKCE, in the browser, against a manager of its own (`manager serve
// --oidc-issuer-url … --oidc-audience slipway-api --ui-oidc-client-id slipway-cockpit`, over
// TLS) seeded with the default clusters. The issuer checks the client id, the exact redirect URI, S256
// and, at its token endpoint, the verifier; it answers CORS for the manager's origin alone, so
// the page's cross-origin calls to it work only from the UI. The manager's Content-Security-
// Policy must let the page reach the issuer (a violation fails the test, newTab).
func TestOIDC(t *testing.T) {
	iss := oidctest.New(t, oidctest.Options{ClientID: oidcClient})
	// The default clusters: the test binary's fleet is sized by its first user, and the shared
	// manager of the other tests needs all four.
	m := managertest.Start(t, managertest.Options{Args: []string{
		"--oidc-issuer-url", iss.URL, "--oidc-audience", "slipway-api", "--ui-oidc-client-id", oidcClient}})
	iss.AddRedirectURI(m.URL + "/login/callback")
	iss.AllowOrigin(m.URL)
	r, err := m.Do("GET", "/", "", nil)
	if err != nil || r.Status != http.StatusOK || strings.Contains(string(r.Body), ui.NotBuilt) {
		t.Fatalf("GET / of the manager: %v %v: it must serve a built UI (make ui)", r, err)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' "+iss.URL+";") {
		t.Fatalf("the UI's Content-Security-Policy %q does not let it connect to the issuer %s", csp, iss.URL)
	}
	t.Run("SignIn", func(t *testing.T) { testOIDCSignIn(t, m, iss) })
	t.Run("NoRole", func(t *testing.T) { testOIDCNoRole(t, m, iss) })
}

// testOIDCSignIn: olga, an Operator at the issuer, opens the manager, is sent to sign-in,
// clicks the issuer's button and lands on the fleet signed in as herself with her role, with no
// code or state left in the address or the tab's history; the session's token is the issuer's
// ID token, which the manager accepts.
func testOIDCSignIn(t *testing.T, m *managertest.Manager, iss *oidctest.Issuer) {
	iss.SignIn(oidctest.User{Subject: "olga", Roles: []string{"Operator"}, Claims: map[string]any{"name": "Olga"}})
	before := len(iss.Authorizations())
	b := newTab(t, m)
	b.open("/", sel("login-oidc"))
	host := strings.TrimPrefix(iss.URL, "http://")
	if got := b.text(sel("login-oidc")); got != "Sign in with "+host {
		t.Fatalf("the sign-in button says %q, want %q", got, "Sign in with "+host)
	}
	if resp := b.clickAway(sel("login-oidc")); resp.Status != http.StatusOK || !strings.HasPrefix(resp.URL, m.URL+"/login/callback?") {
		t.Fatalf("signing in at the issuer led to %s (%d), want the manager's /login/callback", resp.URL, resp.Status)
	}
	b.waitText(sel("user-subject"), "olga")
	if role := b.waitText(sel("user-role"), "Operator"); strings.Contains(role, "Admin") {
		t.Fatalf("olga's role shows as %q", role)
	}
	b.waitURL(`^/$`)
	for _, c := range b.fleetCells(m.Operator, len(m.Clusters)) {
		if !strings.Contains(c.Text, managertest.SeedVersion) {
			t.Fatalf("the fleet shows %+v on %s, want %s", c, c.Cluster, managertest.SeedVersion)
		}
	}
	if b.count(sel("nav-new-deployment")) != 1 || b.count(sel("nav-audit")) != 0 {
		t.Fatal("an Operator sees New deployment and not Audit")
	}
	noCodeInHistory(t, b)

	tok := get(b, "read the session", chromedp.Evaluate[string](`sessionStorage.getItem('slipway.token') || ''`))
	claims := jwtClaims(t, tok)
	if claims["iss"] != iss.URL || claims["aud"] != oidcClient || claims["sub"] != "olga" {
		t.Fatalf("the session's token has claims %v: want the issuer's ID token for olga", claims)
	}
	if r, err := m.Do("GET", "/api/v1/whoami", tok, nil); err != nil || r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"Operator"`) {
		t.Fatalf("the manager on olga's ID token: %v %v", r, err)
	}
	auths, ex := iss.Authorizations()[before:], iss.Exchanges()
	if len(auths) != 1 || auths[0].RedirectURI != m.URL+"/login/callback" || auths[0].Error != "" || auths[0].Nonce == "" {
		t.Fatalf("the issuer saw the authorization requests %+v: want one, for %s/login/callback, with a nonce", auths, m.URL)
	}
	if last := ex[len(ex)-1]; last.Origin != m.URL || last.Error != "" || last.GrantType != "authorization_code" {
		t.Fatalf("the issuer's last token request %+v: want the page of %s trading its code", last, m.URL)
	}
}

// testOIDCNoRole: nora signs in at the issuer, which lists roles of other services only; the
// manager gives her none. She is back on the sign-in page, told so, signed out, with the sign-in
// button offered again, and the browser did not go back to the issuer on its own.
func testOIDCNoRole(t *testing.T, m *managertest.Manager, iss *oidctest.Issuer) {
	iss.SignIn(oidctest.User{Subject: "nora", Roles: []string{"Auditor"}})
	before := len(iss.Authorizations())
	b := newTab(t, m)
	b.open("/login", sel("login-oidc"))
	b.clickAway(sel("login-oidc"))
	msg := b.waitText(sel("login-error"), "nora")
	if !strings.Contains(msg, "no role") {
		t.Fatalf("the sign-in page says %q: want it to say nora has no role here", msg)
	}
	b.waitURL(`^/login$`)
	b.visible(sel("login-oidc"))
	if stored := get(b, "read the session", chromedp.Evaluate[string](`sessionStorage.getItem('slipway.token') || ''`)); stored != "" {
		t.Fatal("a token the manager gives no role was kept")
	}
	noCodeInHistory(t, b)
	if n := len(iss.Authorizations()) - before; n != 1 {
		t.Fatalf("the browser went to the issuer %d times: want once, no loop", n)
	}
}

// clickAway clicks sel, which leaves the application for another page (the issuer, which
// redirects back at once), and waits until the page it leads to has loaded: a wait on an element
// would be cut short by the navigation. It returns that page's HTTP response.
func (b *tab) clickAway(sel string) *network.Response {
	b.t.Helper()
	b.toFront()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("click %s and wait for the page it leads to: %v (page %s)", sel, err, b.url())
	}
	return resp
}

// noCodeInHistory fails the test when the address or any entry of the tab's history holds the
// authorization response (code, state, iss).
func noCodeInHistory(t *testing.T, b *tab) {
	t.Helper()
	h := get(b, "read the history", chromedp.NavigationEntries())
	for _, e := range h.Entries {
		if strings.Contains(e.URL, "code=") || strings.Contains(e.URL, "state=") {
			t.Fatalf("the tab's history holds %s: the authorization response must leave it", e.URL)
		}
	}
}

// jwtClaims are the claims of a JWT's payload (not verified: the manager does that).
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	claims := map[string]any{}
	if err == nil {
		err = json.Unmarshal(raw, &claims)
	}
	if err != nil {
		t.Fatalf("the JWT's payload: %v", err)
	}
	return claims
}
