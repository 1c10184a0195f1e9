//go:build e2e

package cli

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// deviceIssuer is an OIDC issuer with the device flow (RFC 8628) over real HTTP: discovery, a
// JWKS, a device authorization endpoint and a token endpoint that answers authorization_pending
// until the user (the test) approves the user code, then an RS256 ID token for the client.
type deviceIssuer struct {
	srv      *httptest.Server
	key      *rsa.PrivateKey
	subject  string
	roles    []string
	codes    chan string
	mu       sync.Mutex
	approved map[string]bool // by device code
	users    map[string]string
	// seen are the client ids and scopes of the device requests.
	seenClient, seenScope string
}

func newDeviceIssuer(t *testing.T, subject string, roles ...string) *deviceIssuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	d := &deviceIssuer{key: key, subject: subject, roles: roles, codes: make(chan string, 1),
		approved: map[string]bool{}, users: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, http.StatusOK, map[string]any{"issuer": d.srv.URL, "jwks_uri": d.srv.URL + "/keys",
			"authorization_endpoint": d.srv.URL + "/auth", "token_endpoint": d.srv.URL + "/token",
			"device_authorization_endpoint": d.srv.URL + "/device", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, http.StatusOK, map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	})
	mux.HandleFunc("POST /device", d.device)
	mux.HandleFunc("POST /token", d.token)
	d.srv = httptest.NewServer(mux)
	t.Cleanup(d.srv.Close)
	return d
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (d *deviceIssuer) device(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	d.mu.Lock()
	d.seenClient, d.seenScope = r.PostForm.Get("client_id"), r.PostForm.Get("scope")
	device, user := rand.Text(), "WDJB-MJHT"
	d.users[user] = device
	d.mu.Unlock()
	d.codes <- user
	writeJSONBody(w, http.StatusOK, map[string]any{"device_code": device, "user_code": user,
		"verification_uri": d.srv.URL + "/activate", "expires_in": 300, "interval": 1})
}

// approve is the user entering the code in a browser and signing in.
func (d *deviceIssuer) approve(user string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.approved[d.users[user]] = true
}

func (d *deviceIssuer) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" {
		writeJSONBody(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	d.mu.Lock()
	ok := d.approved[r.PostForm.Get("device_code")]
	d.mu.Unlock()
	if !ok {
		writeJSONBody(w, http.StatusBadRequest, map[string]string{"error": "authorization_pending"})
		return
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": d.srv.URL, "sub": d.subject,
		"aud": r.PostForm.Get("client_id"), "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "roles": d.roles})
	tok.Header["kid"] = "k1"
	id, err := tok.SignedString(d.key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSONBody(w, http.StatusOK, map[string]any{"access_token": "opaque-access-token", "token_type": "Bearer",
		"expires_in": 3600, "id_token": id})
}

// TestLoginDeviceFlow: with no --token, login asks the manager for its OIDC issuer (GET
// /api/v1/ui/config), runs the issuer's device flow, checks the ID token with the manager and
// stores it.
func TestLoginDeviceFlow(t *testing.T) {
	iss := newDeviceIssuer(t, "dora", "Operator")
	m := managertest.Start(t, managertest.Options{NoSeed: true, Args: []string{"--oidc-issuer-url", iss.srv.URL,
		"--oidc-audience", "slipway-api", "--ui-oidc-client-id", "slipway-cockpit", "--ui-oidc-scopes", "openid profile"}})
	go func() {
		user := <-iss.codes
		time.Sleep(1500 * time.Millisecond) // the user types the code after the first poll
		iss.approve(user)
	}()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	r := mustRun(t, cfgPath, "", term{}, 0, "login", m.URL, "--certificate-authority", m.CAFile, "--name", "sso")
	if !strings.Contains(r.Stderr, "open "+iss.srv.URL+"/activate and enter the code WDJB-MJHT") ||
		!strings.Contains(r.Stderr, "as dora (Operator)") {
		t.Errorf("login's messages:\n%s", r.Stderr)
	}
	iss.mu.Lock()
	client, scope := iss.seenClient, iss.seenScope
	iss.mu.Unlock()
	if client != "slipway-cockpit" || scope != "openid profile" {
		t.Errorf("the device request: client %q, scope %q", client, scope)
	}
	who := mustRun(t, cfgPath, "", term{}, 0, "whoami")
	if !strings.Contains(who.Stdout, "Subject: dora") || !strings.Contains(who.Stdout, "Context: sso") {
		t.Errorf("whoami after the device sign-in:\n%s", who.Stdout)
	}
}

// TestLoginWithoutDeviceFlow: a manager without an OIDC issuer, no --token and no terminal: a
// usage error saying why, nothing stored.
func TestLoginWithoutDeviceFlow(t *testing.T) {
	m := managertest.Shared(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	r := mustRun(t, cfgPath, "", term{}, ExitError, "login", m.URL, "--certificate-authority", m.CAFile)
	if !strings.Contains(r.Stderr, "give --token: the manager has no OIDC issuer configured") {
		t.Errorf("stderr %q", r.Stderr)
	}
	pasted := mustRun(t, cfgPath, "", term{TTY: true, Stdin: m.Token(managertest.Bob) + "\n"}, 0, "login", m.URL, "--certificate-authority", m.CAFile)
	if !strings.Contains(pasted.Stderr, "Paste a token: ") || !strings.Contains(pasted.Stderr, "as bob (Admin)") {
		t.Errorf("a pasted token on a terminal:\n%s", pasted.Stderr)
	}
}
