package registry

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func basicHeader(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// basicRegistry requires Basic user:pass on every request.
func basicRegistry(t *testing.T, user, pass string) *testServer {
	return newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != basicHeader(user, pass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			writeJSON(w, 401, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		writeJSON(w, 200, `{"tags":["1.0.0"]}`)
	})
}

// tokenRegistry is a registry with a token service at /token, like Docker Hub or ghcr.io.
type tokenRegistry struct {
	*testServer
	tokenRequests atomic.Int32
	generation    atomic.Int32 // bump to revoke every token issued so far
	expiresIn     int
}

func newTokenRegistry(t *testing.T, user, pass string) *tokenRegistry {
	tr := &tokenRegistry{expiresIn: 300}
	tr.testServer = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			tr.tokenRequests.Add(1)
			if user != "" && r.Header.Get("Authorization") != basicHeader(user, pass) {
				writeJSON(w, 401, `{"details":"incorrect username or password"}`)
				return
			}
			q := r.URL.Query()
			if q.Get("service") != "test-registry" || q.Get("scope") != "repository:org/app:pull" {
				writeJSON(w, 400, `{"details":"bad service or scope"}`)
				return
			}
			writeJSON(w, 200, fmt.Sprintf(`{"access_token":"tok-%d","expires_in":%d}`, tr.generation.Load(), tr.expiresIn))
			return
		}
		if r.Header.Get("Authorization") != fmt.Sprintf("Bearer tok-%d", tr.generation.Load()) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test-registry",scope="repository:org/app:pull"`, tr.URL))
			writeJSON(w, 401, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		writeJSON(w, 200, `{"tags":["1.0.0"]}`)
	})
	return tr
}

func TestAuth_AnonymousSendsNoCredentials(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"tags":[]}`) })
	c := newTestClient(t, withCredentials(Credentials{Username: "u", Password: "p"}))
	if _, err := c.ListTags(ctx(t), srv.host()+"/org/app", ""); err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if got := srv.seen()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("sent Authorization %q to a registry that did not ask", got)
	}
}

func TestAuth_Basic(t *testing.T) {
	tests := map[string]struct {
		creds    Credentials
		wantErr  bool
		wantAuth string
	}{
		"password":        {creds: Credentials{Username: "ci", Password: "s3cret"}, wantAuth: basicHeader("ci", "s3cret")},
		"token, no user":  {creds: Credentials{Token: "s3cret"}, wantErr: true},
		"wrong password":  {creds: Credentials{Username: "ci", Password: "nope"}, wantErr: true},
		"no credentials":  {wantErr: true},
		"token with user": {creds: Credentials{Username: "ci", Token: "s3cret"}, wantAuth: basicHeader("ci", "s3cret")},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			srv := basicRegistry(t, "ci", "s3cret")
			c := newTestClient(t, withCredentials(tt.creds))
			for i := range 2 { // the second call sends Basic straight away
				list, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
				if tt.wantErr {
					if !IsAuth(err) || IsRetryable(err) {
						t.Fatalf("error = %v, want a non-retryable auth error", err)
					}
					if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "nope") {
						t.Errorf("error %q reveals a secret", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("ListTags: %v", err)
				}
				if want := []int{2, 1}[i]; list.Requests != want {
					t.Errorf("call %d made %d requests, want %d", i, list.Requests, want)
				}
			}
			seen := srv.seen()
			if got := seen[len(seen)-1].Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
		})
	}
}

func TestAuth_NoCredentialsSaysSo(t *testing.T) {
	srv := basicRegistry(t, "ci", "s3cret")
	_, err := newTestClient(t).ListTags(ctx(t), srv.host()+"/org/app", "")
	if !IsAuth(err) || !strings.Contains(err.Error(), "none are configured") {
		t.Errorf("error = %v, want an auth error saying no credentials are configured", err)
	}
}

func TestAuth_BearerTokenExchange(t *testing.T) {
	for name, creds := range map[string]Credentials{
		"password":    {Username: "ci", Password: "s3cret"},
		"token":       {Token: "s3cret"},
		"token, user": {Username: "ci", Token: "s3cret"},
	} {
		t.Run(name, func(t *testing.T) {
			user := "ci"
			if creds.Username == "" {
				user = "token"
			}
			reg := newTokenRegistry(t, user, "s3cret")
			c := newTestClient(t, withCredentials(creds))

			first, err := c.ListTags(ctx(t), reg.host()+"/org/app", "")
			if err != nil {
				t.Fatalf("ListTags: %v", err)
			}
			if first.Requests != 3 { // 401, token, retry
				t.Errorf("first call made %d requests, want 3", first.Requests)
			}
			second, err := c.ListTags(ctx(t), reg.host()+"/org/app", "")
			if err != nil {
				t.Fatalf("second ListTags: %v", err)
			}
			if second.Requests != 1 || reg.tokenRequests.Load() != 1 {
				t.Errorf("second call made %d requests and %d token requests in all, want 1 and 1 (cached token)", second.Requests, reg.tokenRequests.Load())
			}

			reg.generation.Add(1) // revoke: the cached token now gets a 401
			third, err := c.ListTags(ctx(t), reg.host()+"/org/app", "")
			if err != nil {
				t.Fatalf("ListTags after revocation: %v", err)
			}
			if third.Requests != 3 || reg.tokenRequests.Load() != 2 {
				t.Errorf("after revocation: %d requests, %d token requests, want 3 and 2", third.Requests, reg.tokenRequests.Load())
			}
		})
	}
}

func TestAuth_BearerAnonymousToken(t *testing.T) {
	reg := newTokenRegistry(t, "", "")
	c := newTestClient(t)
	if _, err := c.ListTags(ctx(t), reg.host()+"/org/app", ""); err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	for _, r := range reg.seen() {
		if r.URL.Path == "/token" && r.Header.Get("Authorization") != "" {
			t.Errorf("anonymous token request sent Authorization")
		}
	}
}

func TestAuth_BearerRefusedCredentials(t *testing.T) {
	reg := newTokenRegistry(t, "ci", "s3cret")
	c := newTestClient(t, withCredentials(Credentials{Username: "ci", Password: "wrong"}))
	_, err := c.ListTags(ctx(t), reg.host()+"/org/app", "")
	if !IsAuth(err) || !strings.Contains(err.Error(), OpToken) || !strings.Contains(err.Error(), "incorrect username or password") {
		t.Errorf("error = %v, want a token auth error with the service's message", err)
	}
}

func TestAuth_ExpiredTokenIsRenewedBeforeUse(t *testing.T) {
	reg := newTokenRegistry(t, "ci", "s3cret")
	reg.expiresIn = 60
	c := newTestClient(t, withCredentials(Credentials{Username: "ci", Password: "s3cret"}))
	now := time.Now()
	c.now = func() time.Time { return now }
	for range 2 {
		if _, err := c.ListTags(ctx(t), reg.host()+"/org/app", ""); err != nil {
			t.Fatalf("ListTags: %v", err)
		}
	}
	now = now.Add(55 * time.Second) // inside the refresh margin
	list, err := c.ListTags(ctx(t), reg.host()+"/org/app", "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if reg.tokenRequests.Load() != 2 || list.Requests != 2 {
		t.Errorf("token requests = %d, last call requests = %d; want 2 and 2 (token renewed before the request)", reg.tokenRequests.Load(), list.Requests)
	}
}

func TestAuth_TokenSentDirectlyWithoutAChallenge(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer pat-123" {
			w.WriteHeader(401)
			return
		}
		writeJSON(w, 200, `{"tags":["1.0.0"]}`)
	})
	c := newTestClient(t, withCredentials(Credentials{Token: "pat-123"}))
	if _, err := c.ListTags(ctx(t), srv.host()+"/org/app", ""); err != nil {
		t.Fatalf("ListTags: %v", err)
	}
}

func TestAuth_RefusesUnsafeRealms(t *testing.T) {
	for name, realm := range map[string]string{
		"metadata service": "http://169.254.169.254/token",
		"file":             "file:///etc/passwd",
		"no host":          "http:///token",
		"user info":        "http://u:p@example.com/token",
	} {
		t.Run(name, func(t *testing.T) {
			srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
				w.WriteHeader(401)
			})
			c := newTestClient(t, withCredentials(Credentials{Username: "ci", Password: "s3cret"}))
			_, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
			if err == nil || !strings.Contains(err.Error(), "realm") || IsRetryable(err) {
				t.Errorf("error = %v, want a non-retryable realm error", err)
			}
			if len(srv.seen()) != 1 {
				t.Errorf("made %d requests, want 1", len(srv.seen()))
			}
		})
	}
}

func TestAuth_HTTPSRegistryRefusesHTTPRealm(t *testing.T) {
	c, err := NewClient(Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.checkRealm("http://auth.example.com/token"); err == nil {
		t.Error("an https client accepted an http realm")
	}
	if _, err := c.checkRealm("https://auth.example.com/token"); err != nil {
		t.Errorf("an https realm was refused: %v", err)
	}
}
