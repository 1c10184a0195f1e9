//go:build browser || e2e

package browsertest

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// strictDirectives are what every UI response's Content-Security-Policy must hold: scripts,
// connections and everything else from the manager's own origin only, no plugins, no framing.
var strictDirectives = []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'", "object-src 'none'",
	"base-uri 'self'", "frame-ancestors 'none'"}

// checkCSP fails the test unless policy holds every strict directive and nothing unsafe.
func checkCSP(t *testing.T, what, policy string) {
	t.Helper()
	for _, d := range strictDirectives {
		if !strings.Contains(policy, d) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, policy, d)
		}
	}
	for _, bad := range []string{"'unsafe-inline'", "'unsafe-eval'", "*"} {
		if strings.Contains(policy, bad) {
			t.Errorf("%s: Content-Security-Policy %q allows %s", what, policy, bad)
		}
	}
}

var scriptSrc = regexp.MustCompile(`<script[^>]*\ssrc="([^"]+)"`)

// TestSecurity_StrictCSPAndNoInlineScript: the page, a deep link and the script asset carry the
// strict policy and nosniff; the page as the browser received it has the header, loads its
// scripts from the manager's origin and has no inline script or inline event handler; and the
// console guard of every tab (newTab) reports any violation the pages cause.
func TestSecurity_StrictCSPAndNoInlineScript(t *testing.T) {
	m := manager(t)
	index := m.Must(t, "GET", "/", "", nil, http.StatusOK)
	src := scriptSrc.FindSubmatch(index.Body)
	if src == nil || !strings.HasPrefix(string(src[1]), "/assets/") {
		t.Fatalf("index.html loads no script from /assets/: %s", index.Body)
	}
	if strings.Contains(strings.ReplaceAll(string(index.Body), string(src[0]), ""), "<script") {
		t.Fatalf("index.html has a script besides %s: %s", src[1], index.Body)
	}
	for _, path := range []string{"/", "/login", "/deployments/0b6f6c1e-deep-link", string(src[1])} {
		r := m.Must(t, "GET", path, "", nil, http.StatusOK)
		checkCSP(t, "GET "+path, r.Header.Get("Content-Security-Policy"))
		if r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", path, r.Header.Get("X-Content-Type-Options"))
		}
	}

	b := newTab(t, m)
	resp := get(b, "open the sign-in page", chromedp.NavigateResponse(m.URL+"/login"))
	policy, _ := resp.Headers["Content-Security-Policy"].(string)
	if policy == "" {
		policy, _ = resp.Headers["content-security-policy"].(string)
	}
	checkCSP(t, "the sign-in page in the browser", policy)
	b.signIn(managertest.Alice)
	inline := get(b, "look for inline scripts", chromedp.Evaluate[[]string](`(() => {
		const found = [];
		for (const s of document.scripts) {
			if (!s.src) found.push('inline <script>: ' + s.textContent.slice(0, 80));
			else if (new URL(s.src).origin !== location.origin) found.push('foreign script ' + s.src);
		}
		for (const el of document.querySelectorAll('*')) {
			for (const a of el.attributes) if (a.name.startsWith('on')) found.push(el.tagName + ' ' + a.name);
		}
		return found;
	})()`))
	if len(inline) > 0 {
		t.Fatalf("the signed-in page has inline code: %v", inline)
	}
}
