// Package oidctest is an OpenID Connect issuer for tests, served over real HTTP on loopback
// (httptest): the discovery document, a JWKS, the authorization-code flow with PKCE (S256 only)
// for a public client, and the device flow (RFC 8628). Nobody types a password: the test says
// who is signed in at the issuer (SignIn), the authorization endpoint signs that user in at once
// and redirects back with a code, and a device code is approved when the test calls Approve.
// ID tokens are RS256, with the client id as their audience, the nonce of the authorization
// request and the user's roles in a claim ("roles" by default, as the manager reads it).
//
// It checks what a real issuer checks: the client id, the exact redirect URI, response_type=code,
// a code_challenge with code_challenge_method=S256, and at the token endpoint the code verifier
// against the challenge, the client id and the redirect URI; codes are used once. Browsers call
// its discovery, JWKS and token endpoints from another origin: it answers CORS for the origins
// the test allows (AllowOrigin) and for no other.
//
//	iss := oidctest.New(t, oidctest.Options{ClientID: "slipway-cockpit"})
//	iss.SignIn(oidctest.User{Subject: "olga", Roles: []string{"Operator"}})
//	// start the manager with --oidc-issuer-url iss.URL --ui-oidc-client-id slipway-cockpit, then
//	iss.AddRedirectURI(m.URL + "/login/callback")
//	iss.AllowOrigin(m.URL)
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Lifetimes of what the issuer hands out.
const (
	// CodeTTL is how long an authorization code or a device code can be redeemed.
	CodeTTL = time.Minute
	// TokenTTL is how long an ID token is valid.
	TokenTTL = time.Hour
)

// Options configure an Issuer.
type Options struct {
	// ClientID is the one client the issuer knows: a public client (no secret), as the web UI
	// and the CLI are. Required.
	ClientID string
	// RoleClaim names the ID token claim that lists the user's roles. Default "roles".
	RoleClaim string
}

// User is who signs in at the issuer.
type User struct {
	Subject string
	// Roles go into the role claim; nil leaves the claim out.
	Roles []string
	// Claims are more ID token claims (name, email, …).
	Claims map[string]any
}

// Authorization is one request to the authorization endpoint as the issuer saw it.
type Authorization struct {
	ClientID, RedirectURI, Scope, State, Nonce string
	// Error is the OAuth error answered ("" when a code was issued).
	Error string
}

// Exchange is one request to the token endpoint as the issuer saw it.
type Exchange struct {
	GrantType, ClientID string
	// Origin is the request's Origin header: a browser's page calling from another origin.
	Origin string
	// Error is the OAuth error answered ("" when tokens were issued).
	Error string
}

// Issuer is a running test issuer; it stops when the test ends.
type Issuer struct {
	// URL is the issuer identifier (http://127.0.0.1:port), as the discovery document and the
	// tokens' iss name it.
	URL string

	clientID, roleClaim, kid string
	key                      *rsa.PrivateKey
	srv                      *httptest.Server
	userCodes                chan string

	mu             sync.Mutex
	user           *User
	redirects      []string
	origins        []string
	codes          map[string]*grant  // authorization codes, until redeemed
	devices        map[string]*device // by device code, until redeemed
	byUserCode     map[string]string  // user code → device code
	authorizations []Authorization
	exchanges      []Exchange
	deviceClient   string
	deviceScope    string
}

// New starts an issuer for the test; it is closed when the test ends.
func New(tb testing.TB, opts Options) *Issuer {
	tb.Helper()
	if opts.ClientID == "" {
		tb.Fatal("oidctest: Options.ClientID is required")
	}
	if opts.RoleClaim == "" {
		opts.RoleClaim = "roles"
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	i := &Issuer{clientID: opts.ClientID, roleClaim: opts.RoleClaim, kid: rand.Text()[:8], key: key,
		userCodes: make(chan string, 16), codes: map[string]*grant{}, devices: map[string]*device{},
		byUserCode: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.cors(i.discovery))
	mux.HandleFunc("GET /keys", i.cors(i.keys))
	mux.HandleFunc("GET /authorize", i.authorize)
	mux.HandleFunc("POST /token", i.cors(i.token))
	mux.HandleFunc("POST /device", i.device)
	for _, p := range []string{"/.well-known/openid-configuration", "/keys", "/token"} {
		mux.HandleFunc("OPTIONS "+p, i.preflight)
	}
	i.srv = httptest.NewServer(mux)
	i.URL = i.srv.URL
	tb.Cleanup(i.srv.Close)
	return i
}

// SignIn makes u the user signed in at the issuer: the authorization endpoint issues codes for
// u, and Approve approves device codes for u.
func (i *Issuer) SignIn(u User) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.user = &u
}

// AddRedirectURI registers a redirect URI of the client (compared exactly, as issuers do).
func (i *Issuer) AddRedirectURI(uri string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.redirects = append(i.redirects, uri)
}

// AllowOrigin lets pages of origin (scheme://host:port) read the discovery document, the JWKS
// and the token endpoint's answers (CORS).
func (i *Issuer) AllowOrigin(origin string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.origins = append(i.origins, origin)
}

// Authorizations are the authorization requests so far, in order.
func (i *Issuer) Authorizations() []Authorization {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.authorizations)
}

// Exchanges are the token requests so far, in order.
func (i *Issuer) Exchanges() []Exchange {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.exchanges)
}

func (i *Issuer) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                i.URL,
		"authorization_endpoint":                i.URL + "/authorize",
		"token_endpoint":                        i.URL + "/token",
		"device_authorization_endpoint":         i.URL + "/device",
		"jwks_uri":                              i.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", deviceGrant},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      []string{"openid", "profile", "email"},
		// RFC 9207: the authorization response names the issuer (iss), against mix-up attacks.
		"authorization_response_iss_parameter_supported": true,
	})
}

func (i *Issuer) keys(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": i.kid, "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(i.key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(i.key.E)).Bytes()),
	}}})
}

// allowed tells whether pages of origin may read the issuer's answers.
func (i *Issuer) allowed(origin string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Contains(i.origins, origin)
}

// cors adds Access-Control-Allow-Origin for an allowed origin; a page of any other origin gets
// the answer without it, so its browser does not hand it to the page.
func (i *Issuer) cors(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Origin")
		if o := r.Header.Get("Origin"); o != "" && i.allowed(o) {
			w.Header().Set("Access-Control-Allow-Origin", o)
		}
		h(w, r)
	}
}

// preflight answers a CORS preflight: allowed for an allowed origin, refused (403) otherwise.
func (i *Issuer) preflight(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	o := r.Header.Get("Origin")
	if o == "" || !i.allowed(o) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", o)
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Accept, Authorization, Content-Type, DPoP")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// idToken signs u's ID token for the client.
func (i *Issuer) idToken(u User, nonce string, now time.Time) (string, error) {
	claims := jwt.MapClaims{}
	for k, v := range u.Claims {
		claims[k] = v
	}
	for k, v := range map[string]any{"iss": i.URL, "sub": u.Subject, "aud": i.clientID,
		"iat": now.Unix(), "auth_time": now.Unix(), "exp": now.Add(TokenTTL).Unix()} {
		claims[k] = v
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if u.Roles != nil {
		claims[i.roleClaim] = u.Roles
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = i.kid
	return tok.SignedString(i.key)
}

// tokens answers a token request with u's tokens.
func (i *Issuer) tokens(w http.ResponseWriter, u User, nonce, scope string) {
	id, err := i.idToken(u, nonce, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": rand.Text(), "token_type": "Bearer",
		"expires_in": int(TokenTTL / time.Second), "id_token": id, "scope": scope})
}

// token is the token endpoint: the authorization-code grant and the device grant.
func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	ex := Exchange{GrantType: f.Get("grant_type"), ClientID: clientOf(r), Origin: r.Header.Get("Origin")}
	var u User
	var nonce, scope string
	var e *oauthErr
	switch ex.GrantType {
	case "authorization_code":
		u, nonce, scope, e = i.redeemCode(ex.ClientID, f)
	case deviceGrant:
		u, scope, e = i.redeemDevice(ex.ClientID, f)
	default:
		e = &oauthErr{http.StatusBadRequest, "unsupported_grant_type", "grant_type " + ex.GrantType + " is not supported"}
	}
	if e != nil {
		ex.Error = e.code
	}
	i.mu.Lock()
	i.exchanges = append(i.exchanges, ex)
	i.mu.Unlock()
	if e != nil {
		oauthError(w, e.status, e.code, e.description)
		return
	}
	i.tokens(w, u, nonce, scope)
}

// clientOf is a token request's client id: its client_id parameter, or the user name of its
// Basic authorization (a public client's secret is empty; golang.org/x/oauth2 sends it so).
func clientOf(r *http.Request) string {
	if id := r.PostForm.Get("client_id"); id != "" {
		return id
	}
	if u, _, ok := r.BasicAuth(); ok {
		if id, err := url.QueryUnescape(u); err == nil {
			return id
		}
	}
	return ""
}

// oauthErr is an OAuth error answer (RFC 6749 section 5.2).
type oauthErr struct {
	status            int
	code, description string
}

func oauthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// hasScope tells whether the space-separated scope holds s.
func hasScope(scope, s string) bool { return slices.Contains(strings.Fields(scope), s) }
