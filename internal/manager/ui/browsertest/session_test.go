//go:build browser || e2e

package browsertest

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/auth"
)

// TestSecurity_401ReturnsToSignIn signs in with a token that expires in seconds; once the manager
// refuses it, the next page's call gets a 401, and the UI drops the token and returns to sign-in
// with the page as return_url.
func TestSecurity_401ReturnsToSignIn(t *testing.T) {
	m := manager(t)
	tok, err := m.MintToken("erin", 12*time.Second, auth.Viewer)
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, m)
	b.open("/login", sel("login-token"))
	b.do("paste erin's short-lived token",
		chromedp.SendKeys(chromedp.CSS(sel("login-token")), tok),
		chromedp.Click(chromedp.CSS(sel("login-submit"))),
	)
	b.waitText(sel("user-subject"), "erin")

	// Wait, without sleeping blind, until the manager refuses the token.
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := m.Do("GET", "/api/v1/whoami", tok, nil)
		if err == nil && r.Status == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager still accepts erin's token a minute on: %v %v", r, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.click(sel("nav-deployments"))
	b.waitURL(`^/login\?return_url=%2Fdeployments$`)
	b.visible(sel("login-token"))
	if left := get(b, "read the session", chromedp.Evaluate[string](`sessionStorage.getItem('slipway.token') || ''`)); left != "" {
		t.Fatal("the refused token is still in session storage")
	}
}
