//go:build e2e

package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/auth/oidctest"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// TestLoginDeviceFlow: with no --token, login asks the manager for its OIDC issuer (GET
// /api/v1/ui/config), runs the issuer's device flow, checks the ID token with the manager and
// stores it.
func TestLoginDeviceFlow(t *testing.T) {
	iss := oidctest.New(t, oidctest.Options{ClientID: "slipway-cockpit"})
	iss.SignIn(oidctest.User{Subject: "dora", Roles: []string{"Operator"}})
	m := managertest.Start(t, managertest.Options{NoSeed: true, Args: []string{"--oidc-issuer-url", iss.URL,
		"--oidc-audience", "slipway-api", "--ui-oidc-client-id", "slipway-cockpit", "--ui-oidc-scopes", "openid profile"}})
	codes := make(chan string, 1)
	go func() {
		user := <-iss.UserCodes()
		time.Sleep(1500 * time.Millisecond) // the user types the code after the first poll
		iss.Approve(user)
		codes <- user
	}()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	r := mustRun(t, cfgPath, "", term{}, 0, "login", m.URL, "--certificate-authority", m.CAFile, "--name", "sso")
	user := <-codes
	if !strings.Contains(r.Stderr, "open "+iss.URL+"/activate and enter the code "+user) ||
		!strings.Contains(r.Stderr, "as dora (Operator)") {
		t.Errorf("login's messages:\n%s", r.Stderr)
	}
	client, scope := iss.DeviceRequest()
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
