package oidctest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// grant is an authorization code waiting to be redeemed.
type grant struct {
	clientID, redirectURI, challenge, nonce, scope string
	user                                           User
	expires                                        time.Time
}

// authorize is the authorization endpoint: it signs the test's user in at once and redirects
// to the redirect URI with a code, the state and the issuer (RFC 9207). An unknown client or
// redirect URI is answered here (400), never redirected to; other errors go back to the client.
func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a := Authorization{ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), Scope: q.Get("scope"),
		State: q.Get("state"), Nonce: q.Get("nonce")}
	i.mu.Lock()
	registered := slices.Contains(i.redirects, a.RedirectURI)
	user := i.user
	i.mu.Unlock()
	if a.ClientID != i.clientID || !registered {
		a.Error = "invalid_request"
		i.record(a)
		http.Error(w, "unknown client_id or a redirect_uri not registered for it: "+a.ClientID+" "+a.RedirectURI, http.StatusBadRequest)
		return
	}
	var code, why string
	switch {
	case q.Get("response_type") != "code":
		code, why = "unsupported_response_type", "response_type must be code"
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		code, why = "invalid_request", "PKCE is required: a code_challenge with code_challenge_method S256"
	case !hasScope(a.Scope, "openid"):
		code, why = "invalid_scope", "the scope must include openid"
	case user == nil:
		code, why = "access_denied", "nobody signed in at the issuer"
	}
	back := url.Values{"state": {a.State}, "iss": {i.URL}}
	if code != "" {
		a.Error = code
		back.Set("error", code)
		back.Set("error_description", why)
	} else {
		c := rand.Text()
		i.mu.Lock()
		i.codes[c] = &grant{clientID: a.ClientID, redirectURI: a.RedirectURI, challenge: q.Get("code_challenge"),
			nonce: a.Nonce, scope: a.Scope, user: *user, expires: time.Now().Add(CodeTTL)}
		i.mu.Unlock()
		back.Set("code", c)
	}
	i.record(a)
	http.Redirect(w, r, a.RedirectURI+"?"+back.Encode(), http.StatusFound)
}

func (i *Issuer) record(a Authorization) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.authorizations = append(i.authorizations, a)
}

// redeemCode checks an authorization-code grant and uses its code up, whatever the outcome.
func (i *Issuer) redeemCode(client string, f url.Values) (User, string, string, *oauthErr) {
	i.mu.Lock()
	g, ok := i.codes[f.Get("code")]
	delete(i.codes, f.Get("code"))
	i.mu.Unlock()
	bad := func(code, why string) (User, string, string, *oauthErr) {
		status := http.StatusBadRequest
		if code == "invalid_client" {
			status = http.StatusUnauthorized
		}
		return User{}, "", "", &oauthErr{status, code, why}
	}
	sum := sha256.Sum256([]byte(f.Get("code_verifier")))
	switch {
	case client != i.clientID:
		return bad("invalid_client", "unknown client_id "+client)
	case !ok:
		return bad("invalid_grant", "unknown or used authorization code")
	case time.Now().After(g.expires):
		return bad("invalid_grant", "the authorization code expired")
	case g.clientID != client:
		return bad("invalid_grant", "the code was issued to another client")
	case g.redirectURI != f.Get("redirect_uri"):
		return bad("invalid_grant", "redirect_uri differs from the authorization request's")
	case subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(g.challenge)) != 1:
		return bad("invalid_grant", "code_verifier does not match the code_challenge")
	}
	return g.user, g.nonce, g.scope, nil
}
