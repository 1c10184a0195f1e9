package oidctest_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/auth/oidctest"
)

const (
	client   = "slipway-cockpit"
	origin   = "https://127.0.0.1:8443"
	callback = origin + "/login/callback"
	verifier = "a-code-verifier-of-the-client-that-is-long-enough-for-pkce-43"
)

// noRedirects is a client that reports redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func newIssuer(t *testing.T, u *oidctest.User) *oidctest.Issuer {
	iss := oidctest.New(t, oidctest.Options{ClientID: client})
	if u != nil {
		iss.SignIn(*u)
	}
	iss.AddRedirectURI(callback)
	iss.AllowOrigin(origin)
	return iss
}

// authorizeQuery is a good authorization request; change modifies it.
func authorizeQuery(change func(url.Values)) url.Values {
	q := url.Values{"client_id": {client}, "redirect_uri": {callback}, "response_type": {"code"},
		"scope": {"openid profile"}, "state": {"st-1"}, "nonce": {"n-1"},
		"code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}}
	if change != nil {
		change(q)
	}
	return q
}

// authorize sends the request and returns where the issuer redirected to (nil: it answered
// itself, with the status returned).
func authorize(t *testing.T, iss *oidctest.Issuer, q url.Values) (*url.URL, int) {
	t.Helper()
	resp, err := noRedirects.Get(iss.URL + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, resp.StatusCode
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc, resp.StatusCode
}

// code runs a good authorization request and returns its code.
func code(t *testing.T, iss *oidctest.Issuer) string {
	t.Helper()
	loc, status := authorize(t, iss, authorizeQuery(nil))
	if loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %v, want a redirect with a code", status, loc)
	}
	return loc.Query().Get("code")
}

type tokenAnswer struct {
	Status           int
	AllowOrigin      string
	IDToken          string `json:"id_token"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// token posts form to the token endpoint from a page of origin o.
func token(t *testing.T, iss *oidctest.Issuer, o string, form url.Values) tokenAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, iss.URL+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", o)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := tokenAnswer{Status: resp.StatusCode, AllowOrigin: resp.Header.Get("Access-Control-Allow-Origin")}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

func codeForm(c string, change func(url.Values)) url.Values {
	f := url.Values{"grant_type": {"authorization_code"}, "code": {c}, "client_id": {client},
		"redirect_uri": {callback}, "code_verifier": {verifier}}
	if change != nil {
		change(f)
	}
	return f
}

// TestCodeFlow: a code for the signed-in user, redirected with state and iss; redeemed once for
// an ID token that the manager's OIDC verifier accepts with the client id as audience, with the
// user's roles and the request's nonce; a page of the allowed origin may read the answer.
func TestCodeFlow(t *testing.T) {
	iss := newIssuer(t, &oidctest.User{Subject: "olga", Roles: []string{"Operator"}, Claims: map[string]any{"name": "Olga"}})
	loc, _ := authorize(t, iss, authorizeQuery(nil))
	if loc == nil || loc.Scheme+"://"+loc.Host+loc.Path != callback || loc.Query().Get("state") != "st-1" || loc.Query().Get("iss") != iss.URL {
		t.Fatalf("the authorization response %v: want %s with the code, state st-1 and iss %s", loc, callback, iss.URL)
	}
	c := loc.Query().Get("code")
	a := token(t, iss, origin, codeForm(c, nil))
	if a.Status != http.StatusOK || a.IDToken == "" || a.AllowOrigin != origin {
		t.Fatalf("the token answer %+v: want 200 with an ID token, readable by %s", a, origin)
	}
	v, err := auth.NewOIDC(context.Background(), iss.URL, client, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(context.Background(), a.IDToken)
	if err != nil || id.Subject != "olga" || !slices.Equal(id.Roles, []auth.Role{auth.Operator}) {
		t.Fatalf("the manager's verifier: %v %v, want olga as Operator", id, err)
	}
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(a.IDToken, claims); err != nil || claims["nonce"] != "n-1" || claims["name"] != "Olga" {
		t.Fatalf("the ID token's claims %v (%v): want nonce n-1 and name Olga", claims, err)
	}
	again := token(t, iss, origin, codeForm(c, nil))
	if again.Status != http.StatusBadRequest || again.Error != "invalid_grant" {
		t.Fatalf("the code redeemed twice: %+v, want invalid_grant", again)
	}
	ex := iss.Exchanges()
	if len(ex) != 2 || ex[0].Error != "" || ex[0].Origin != origin || ex[1].Error != "invalid_grant" {
		t.Fatalf("the exchanges %+v", ex)
	}
}

// TestCodeFlow_TokenRefusals: a code is refused with the wrong verifier, redirect URI or
// client, and used up by the attempt.
func TestCodeFlow_TokenRefusals(t *testing.T) {
	iss := newIssuer(t, &oidctest.User{Subject: "olga", Roles: []string{"Viewer"}})
	for name, tc := range map[string]struct {
		change       func(url.Values)
		status       int
		code, reason string
	}{
		"verifier":     {func(f url.Values) { f.Set("code_verifier", verifier+"x") }, 400, "invalid_grant", "code_verifier"},
		"no verifier":  {func(f url.Values) { f.Del("code_verifier") }, 400, "invalid_grant", "code_verifier"},
		"redirect uri": {func(f url.Values) { f.Set("redirect_uri", origin+"/elsewhere") }, 400, "invalid_grant", "redirect_uri"},
		"client":       {func(f url.Values) { f.Set("client_id", "another") }, 401, "invalid_client", "another"},
		"grant type":   {func(f url.Values) { f.Set("grant_type", "password") }, 400, "unsupported_grant_type", "password"},
	} {
		t.Run(name, func(t *testing.T) {
			c := code(t, iss)
			a := token(t, iss, origin, codeForm(c, tc.change))
			if a.Status != tc.status || a.Error != tc.code || !strings.Contains(a.ErrorDescription, tc.reason) || a.IDToken != "" {
				t.Fatalf("%+v: want %d %s naming %q", a, tc.status, tc.code, tc.reason)
			}
			if tc.code == "invalid_grant" {
				if used := token(t, iss, origin, codeForm(c, nil)); used.Error != "invalid_grant" {
					t.Fatalf("the code after a refused attempt: %+v, want it used up", used)
				}
			}
		})
	}
}

// TestAuthorize_Refusals: an unknown client or redirect URI is answered by the issuer (never
// redirected to); the other errors go back to the client with the state.
func TestAuthorize_Refusals(t *testing.T) {
	iss := newIssuer(t, &oidctest.User{Subject: "olga"})
	for name, change := range map[string]func(url.Values){
		"client":       func(q url.Values) { q.Set("client_id", "another") },
		"redirect uri": func(q url.Values) { q.Set("redirect_uri", callback+"/x") },
	} {
		if loc, status := authorize(t, iss, authorizeQuery(change)); loc != nil || status != http.StatusBadRequest {
			t.Errorf("%s: %d %v, want 400 and no redirect", name, status, loc)
		}
	}
	for name, tc := range map[string]struct {
		change func(url.Values)
		error  string
	}{
		"plain PKCE":    {func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		"no PKCE":       {func(q url.Values) { q.Del("code_challenge") }, "invalid_request"},
		"implicit":      {func(q url.Values) { q.Set("response_type", "id_token") }, "unsupported_response_type"},
		"no openid":     {func(q url.Values) { q.Set("scope", "profile") }, "invalid_scope"},
		"nobody signed": {nil, "access_denied"},
	} {
		target := iss
		if tc.change == nil {
			target = newIssuer(t, nil)
		}
		loc, status := authorize(t, target, authorizeQuery(tc.change))
		if loc == nil || loc.Query().Get("error") != tc.error || loc.Query().Get("state") != "st-1" || loc.Query().Has("code") {
			t.Errorf("%s: %d %v, want a redirect with error=%s and the state", name, status, loc, tc.error)
		}
	}
}

// TestCORS: the token endpoint and discovery are readable by pages of allowed origins only;
// a preflight is allowed for them and refused for others.
func TestCORS(t *testing.T) {
	iss := newIssuer(t, &oidctest.User{Subject: "olga"})
	if a := token(t, iss, "https://elsewhere.example", codeForm(code(t, iss), nil)); a.AllowOrigin != "" {
		t.Fatalf("a page of another origin may read the token answer: %q", a.AllowOrigin)
	}
	for o, want := range map[string]int{origin: http.StatusNoContent, "https://elsewhere.example": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodOptions, iss.URL+"/.well-known/openid-configuration", nil)
		req.Header.Set("Origin", o)
		req.Header.Set("Access-Control-Request-Method", "GET")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != want || (want == http.StatusNoContent) != (got == o) {
			t.Errorf("preflight from %s: %d, allow-origin %q; want %d", o, resp.StatusCode, got, want)
		}
	}
}

// TestDeviceFlow: pending until the user approves the user code, then an ID token once; the
// client id may come as Basic authorization (golang.org/x/oauth2's first try).
func TestDeviceFlow(t *testing.T) {
	iss := newIssuer(t, &oidctest.User{Subject: "dora", Roles: []string{"Admin"}})
	resp, err := http.PostForm(iss.URL+"/device", url.Values{"client_id": {client}, "scope": {"openid"}})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DeviceCode string `json:"device_code"`
		UserCode   string `json:"user_code"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || d.UserCode != <-iss.UserCodes() {
		t.Fatalf("the device answer %+v (%v)", d, err)
	}
	_ = resp.Body.Close()
	poll := func() tokenAnswer {
		req, _ := http.NewRequest(http.MethodPost, iss.URL+"/token", strings.NewReader(url.Values{
			"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {d.DeviceCode}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(client, "")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		a := tokenAnswer{Status: resp.StatusCode}
		_ = json.NewDecoder(resp.Body).Decode(&a)
		return a
	}
	if a := poll(); a.Error != "authorization_pending" {
		t.Fatalf("before approval: %+v", a)
	}
	if !iss.Approve(d.UserCode) || iss.Approve("NONE-SUCH") {
		t.Fatal("Approve: want true for the user code, false for another")
	}
	if a := poll(); a.Status != http.StatusOK || a.IDToken == "" {
		t.Fatalf("after approval: %+v", a)
	}
	if a := poll(); a.Error != "invalid_grant" {
		t.Fatalf("redeemed twice: %+v", a)
	}
	if c, s := iss.DeviceRequest(); c != client || s != "openid" {
		t.Fatalf("DeviceRequest: %q %q", c, s)
	}
}
