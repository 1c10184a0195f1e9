//go:build browser || e2e

package browsertest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// TestSignIn_PastedToken signs in by pasting a token of alice's: the navigation names her and her
// role, the token lives in the tab's session storage and never in the address, and signing out
// clears it, returns to sign-in and ends the token on the manager (DELETE /api/v1/session), which
// refuses it from then on. The token is one of its own: the harness's alice signs out nothing.
func TestSignIn_PastedToken(t *testing.T) {
	m := manager(t)
	tok, err := m.MintToken(managertest.Alice, time.Hour, auth.Admin)
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, m)
	b.open("/login", sel("login-token"))
	b.do("paste a token of alice's",
		chromedp.SendKeys(chromedp.CSS(sel("login-token")), tok),
		chromedp.Click(chromedp.CSS(sel("login-submit"))),
	)
	b.waitText(sel("user-subject"), managertest.Alice)
	if role := b.text(sel("user-role")); !strings.Contains(role, "Admin") {
		t.Fatalf("the role shown for alice is %q, want Admin", role)
	}
	if u := b.url(); strings.Contains(u, tok) || strings.Contains(u, "token") {
		t.Fatalf("the address %s holds the token", u)
	}
	stored := get(b, "read the session", chromedp.Evaluate[string](`sessionStorage.getItem('slipway.token') || ''`))
	if stored != tok {
		t.Fatalf("session storage holds %q, want alice's token", stored)
	}

	b.click(sel("sign-out"))
	b.visible(sel("login-token"))
	b.waitURL(`^/login`)
	if left := get(b, "read the session", chromedp.Evaluate[string](`sessionStorage.getItem('slipway.token') || ''`)); left != "" {
		t.Fatal("signing out left the token in session storage")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := m.Do("GET", "/api/v1/whoami", tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == http.StatusUnauthorized && strings.Contains(string(r.Body), "this session was signed out") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager still answers the signed-out token: %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSignIn_RefusedToken: a token the manager refuses is reported on the sign-in page and never
// kept.
func TestSignIn_RefusedToken(t *testing.T) {
	m := manager(t)
	b := newTab(t, m)
	b.open("/login", sel("login-token"))
	b.do("paste a forged token",
		chromedp.SendKeys(chromedp.CSS(sel("login-token")), m.Token(managertest.Alice)+"x"),
		chromedp.Click(chromedp.CSS(sel("login-submit"))),
	)
	b.waitText(sel("login-error"), "refused")
	if stored := get(b, "read the session", chromedp.Evaluate[string](`sessionStorage.getItem('slipway.token') || ''`)); stored != "" {
		t.Fatalf("a refused token was kept: %q", stored)
	}
}

// TestSignIn_OneTimeLink opens the link `manager login-link` prints (make dev writes one to
// .slipway/dev/ui.url): the ticket leaves the address before anything else happens, is exchanged
// once for a session token, and the fleet shows signed in as the link's subject. The same link
// opened again is refused, and so is its ticket posted to the API.
func TestSignIn_OneTimeLink(t *testing.T) {
	m := manager(t)
	link := m.LoginLink(t, "dora", auth.Admin)
	ticket := link[strings.Index(link, "#ticket=")+len("#ticket="):]
	b := newTab(t, m)

	b.do("open the sign-in link", chromedp.Navigate(link))
	if u := b.url(); strings.Contains(u, "ticket") {
		t.Fatalf("the address still holds the ticket once the page loaded: %s", u)
	}
	b.waitText(sel("user-subject"), "dora")
	here := b.waitURL(`^/$`)
	history := get(b, "read the history", chromedp.Evaluate[int](`history.length`))
	if strings.Contains(b.url(), "ticket") || history > 2 {
		t.Fatalf("signed in at %s with %d history entries: the ticket must leave the address and the history", here, history)
	}
	if stored := get(b, "read the session", chromedp.Evaluate[string](`sessionStorage.getItem('slipway.token') || ''`)); stored == "" || stored == ticket {
		t.Fatalf("session storage holds %q: want a session token, not the ticket", stored)
	}

	// Used once: the API refuses it, and a second tab opening the link stays signed out.
	if r, err := m.Do("POST", "/api/v1/session", "", map[string]string{"ticket": ticket}); err != nil || r.Status != http.StatusUnauthorized {
		t.Fatalf("the used ticket posted again: %v %v, want 401", r, err)
	}
	again := newTab(t, m)
	again.do("open the used link", chromedp.Navigate(link))
	again.waitText(sel("login-error"), "did not work")
	again.visible(sel("login-token"))
}
