//go:build e2e

package cli

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// runEnv runs slipway in-process with the environment env (no terminal), expecting exit code want.
func runEnv(tb testing.TB, env map[string]string, want int, args ...string) cliRun {
	tb.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, func(k string) string { return env[k] })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := cliRun{Code: Run(ctx, f, args)}
	r.Stdout, r.Stderr = out.String(), errOut.String()
	if r.Code != want {
		tb.Fatalf("slipway %s: exit %d, want %d\nstderr:\n%s", strings.Join(args, " "), r.Code, want, r.Stderr)
	}
	return r
}

// tokenOf is the token the config file at path holds for user.
func tokenOf(tb testing.TB, path, user string) string {
	tb.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	u, ok := cfg.User(user)
	if !ok {
		tb.Fatalf("no user %s in %s", user, path)
	}
	return u.Token
}

// managerRefuses fails unless the manager answers tok with 401 saying want.
func managerRefuses(t *testing.T, m *managertest.Manager, what, tok, want string) {
	t.Helper()
	r, err := m.Do("GET", "/api/v1/whoami", tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), want) {
		t.Fatalf("%s: %d %s, want 401 saying %q", what, r.Status, r.Body, want)
	}
}

// TestLogout: slipway logout revokes the context's token on the real manager (the manager and the
// CLI refuse it afterwards) and removes it from every context holding it; another user's token
// (one of `manager token`'s) goes on working until it is signed out in turn; a token without an
// id is removed with the manager's warning that it stays valid; an unreachable manager keeps the
// token unless --local; with $SLIPWAY_TOKEN that token is revoked and the file left alone; every
// sign-out is in the manager's audit log.
func TestLogout(t *testing.T) {
	m := managertest.Shared(t)
	lena, err := m.MintToken("lena", time.Hour, auth.Operator)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Run("token", "--subject", "mick", "--role", "Viewer")
	if err != nil || res.Code != 0 {
		t.Fatalf("manager token: %v %+v", err, res)
	}
	mick := strings.TrimSpace(res.Stdout)
	legacy, err := m.SignToken(jwt.MapClaims{"iss": auth.MintIssuer, "sub": "nina", "roles": []string{"Viewer"},
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "slipway.yaml")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// In this order in the file (a map's order would vary), which logout names its users in.
	for _, u := range []config.User{{Name: "lena", Token: lena}, {Name: "lena-copy", Token: lena}, {Name: "nina", Token: legacy}, {Name: "mick", Token: mick}} {
		cfg.Upsert(config.Context{Name: u.Name, Server: m.URL, CertificateAuthority: m.CAFile}, u)
	}
	cfg.Upsert(config.Context{Name: "nowhere", Server: "https://127.0.0.1:1"}, config.User{Name: "nowhere", Token: "x"})
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}

	mustRun(t, cfgPath, "lena", term{}, 0, "whoami")
	r := mustRun(t, cfgPath, "", term{}, 0, "logout", "lena")
	if !strings.Contains(r.Stderr, "The manager revoked the token: it no longer works anywhere.") ||
		!strings.Contains(r.Stderr, "Signed out of lena ("+m.URL+")") || !strings.Contains(r.Stderr, "(users: lena, lena-copy)") {
		t.Errorf("logout's messages:\n%s", r.Stderr)
	}
	if tokenOf(t, cfgPath, "lena") != "" || tokenOf(t, cfgPath, "lena-copy") != "" || tokenOf(t, cfgPath, "mick") != mick {
		t.Error("the token is not removed from lena and lena-copy alone")
	}
	managerRefuses(t, m, "lena's signed-out token", lena, "this session was signed out")
	w := mustRun(t, cfgPath, "lena", term{}, ExitAuth, "whoami")
	if !strings.Contains(w.Stderr, "signed out of the context lena") || !strings.Contains(w.Stderr, "slipway login "+m.URL+" --name lena") {
		t.Errorf("whoami after logout:\n%s", w.Stderr)
	}
	if again := mustRun(t, cfgPath, "", term{}, 0, "logout", "lena"); !strings.Contains(again.Stderr, "Already signed out of lena") {
		t.Errorf("logout again:\n%s", again.Stderr)
	}

	mustRun(t, cfgPath, "mick", term{}, 0, "whoami")
	mustRun(t, cfgPath, "", term{}, 0, "--context", "mick", "logout")
	managerRefuses(t, m, "a signed-out token of manager token", mick, "this session was signed out")

	r = mustRun(t, cfgPath, "", term{}, 0, "logout", "nina")
	if !strings.Contains(r.Stderr, "Warning: the manager cannot revoke the token: this token has no id (jti)") || tokenOf(t, cfgPath, "nina") != "" {
		t.Errorf("logout with a token without an id:\n%s", r.Stderr)
	}
	if res, err := m.Do("GET", "/api/v1/whoami", legacy, nil); err != nil || res.Status != http.StatusOK {
		t.Errorf("the token without an id after logout: %v %+v, want it still valid", err, res)
	}

	testLogoutUnreachable(t, cfgPath)
	testLogoutEnvToken(t, m, cfgPath)
	testLogoutAudited(t, m)
}

// testLogoutUnreachable: a manager that does not answer keeps the token (exit 1, pointing at
// --local); --local removes it.
func testLogoutUnreachable(t *testing.T, cfgPath string) {
	r := mustRun(t, cfgPath, "", term{}, ExitError, "logout", "nowhere")
	if !strings.Contains(r.Stderr, "the token is kept") || !strings.Contains(r.Stderr, "slipway logout --local") || tokenOf(t, cfgPath, "nowhere") != "x" {
		t.Errorf("logout of an unreachable manager:\n%s", r.Stderr)
	}
	r = mustRun(t, cfgPath, "", term{}, 0, "logout", "nowhere", "--local")
	if !strings.Contains(r.Stderr, "Not revoked (--local)") || tokenOf(t, cfgPath, "nowhere") != "" {
		t.Errorf("logout --local:\n%s", r.Stderr)
	}
	mustRun(t, cfgPath, "", term{}, ExitError, "logout", "nowhere", "--context", "lena")
}

// testLogoutEnvToken: with $SLIPWAY_TOKEN, that token is revoked and the config file is unchanged.
func testLogoutEnvToken(t *testing.T, m *managertest.Manager, cfgPath string) {
	ci, err := m.MintToken("ci", time.Hour, auth.Viewer)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvConfig: cfgPath, EnvContext: "lena", EnvToken: ci}
	runEnv(t, env, ExitError, "logout", "--local")
	r := runEnv(t, env, 0, "logout")
	if !strings.Contains(r.Stderr, "the token came from $SLIPWAY_TOKEN (unset it)") {
		t.Errorf("logout with $SLIPWAY_TOKEN:\n%s", r.Stderr)
	}
	managerRefuses(t, m, "the signed-out $SLIPWAY_TOKEN", ci, "this session was signed out")
}

// testLogoutAudited: the manager's audit log has each sign-out.
func testLogoutAudited(t *testing.T, m *managertest.Manager) {
	var list api.AuditList
	m.Must(t, "GET", "/api/v1/audit?action=session.delete&limit=1000", managertest.Alice, nil, http.StatusOK).JSON(t, &list)
	got := map[string]int{}
	for _, e := range list.Items {
		got[e.Actor+"/"+e.Result]++
	}
	for key, n := range map[string]int{"lena/success": 1, "mick/success": 1, "ci/success": 1, "nina/failed": 1} {
		if got[key] != n {
			t.Errorf("audit %s: %d, want %d (%v)", key, got[key], n, got)
		}
	}
}
