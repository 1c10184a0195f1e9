package registrytest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	tokenPath    = "/token"
	tokenService = "registrytest"
	// tokenLifetime is the expires_in of issued tokens.
	tokenLifetime = 300
)

// RevokeTokens invalidates every token issued so far, as an expiry would: the next request with
// one gets a 401 challenge again.
func (p *FaultProxy) RevokeTokens() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens = map[string]bool{}
}

// authorize serves the token endpoint and checks Bearer tokens on registry requests. It returns
// true when the request may be forwarded.
func (p *FaultProxy) authorize(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == tokenPath {
		p.serveToken(w, r)
		return false
	}
	if !strings.HasPrefix(r.URL.Path, "/v2/") {
		http.NotFound(w, r)
		return false
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		p.mu.Lock()
		valid := p.tokens[tok]
		p.mu.Unlock()
		if valid {
			return true
		}
	}
	challenge := fmt.Sprintf(`Bearer realm="%s%s",service="%s"`, p.URL, tokenPath, tokenService)
	if m := repoPath.FindStringSubmatch(r.URL.Path); m != nil {
		challenge += fmt.Sprintf(`,scope="repository:%s:pull"`, m[1])
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeJSON(w, http.StatusUnauthorized, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
	return false
}

// serveToken issues an opaque token for the configured Basic credentials (or to anyone when no
// user name is configured).
func (p *FaultProxy) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("service") != tokenService {
		writeJSON(w, http.StatusBadRequest, `{"details":"unknown service"}`)
		return
	}
	if p.cfg.tokenUser != "" {
		user, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(p.cfg.tokenUser)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(p.cfg.tokenPass)) != 1 {
			writeJSON(w, http.StatusUnauthorized, `{"details":"incorrect username or password"}`)
			return
		}
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	tok := hex.EncodeToString(raw)
	p.mu.Lock()
	p.tokens[tok] = true
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, fmt.Sprintf(`{"token":%q,"access_token":%q,"expires_in":%d,"issued_at":%q}`,
		tok, tok, tokenLifetime, time.Now().UTC().Format(time.RFC3339)))
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}
