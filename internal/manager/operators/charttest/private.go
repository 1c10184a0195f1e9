package charttest

import (
	"crypto/subtle"
	"net/http"
	"net/http/httptest"
	"testing"

	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// Auth is what a private repository demands: HTTP Basic with Username and Password, or, when
// Token is set, "Authorization: Bearer <Token>".
type Auth struct {
	Username, Password, Token string
}

func (a Auth) allows(req *http.Request) bool {
	if a.Token != "" {
		return subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte("Bearer "+a.Token)) == 1
	}
	u, p, ok := req.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(u), []byte(a.Username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(p), []byte(a.Password)) == 1
}

// ServePrivateRepository is ServeRepository behind authentication: every request without auth's
// credentials (index.yaml and archives alike, which the index names on the same host) is
// answered 401.
func ServePrivateRepository(t testing.TB, auth Auth, charts ...ChartFiles) *Repository {
	t.Helper()
	r := &Repository{index: repo.NewIndexFile(), archives: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !auth.allows(req) {
			r.refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.serve(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	for _, c := range charts {
		r.Add(t, c)
	}
	return r
}

// Refused is how many requests a private repository answered 401.
func (r *Repository) Refused() int64 { return r.refused.Load() }
