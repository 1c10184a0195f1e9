//go:build browser || e2e

package browsertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// apiFromPage sends method path (body: JSON text, or "") from the page with the page's own
// session token, as the UI's code would, and returns "status message".
func (b *tab) apiFromPage(method, path, body string) string {
	b.t.Helper()
	return get(b, method+" "+path+" from the page", chromedp.Evaluate[string](fmt.Sprintf(`(async () => {
		const init = {method: %q, headers: {Authorization: 'Bearer ' + sessionStorage.getItem('slipway.token')}};
		if (%q !== '') { init.body = %q; init.headers['Content-Type'] = 'application/json'; }
		const r = await fetch(%q, init);
		const text = await r.text();
		let msg = text;
		try { msg = JSON.parse(text).message || text; } catch (e) {}
		return r.status + ' ' + msg;
	})()`, method, body, body, path), chromedp.EvalAwaitPromise))
}

// absent fails the test when an element with data-testid id is on the page (call it once the
// page shows what it loaded: absence is only meaningful then).
func (b *tab) absent(id string) {
	b.t.Helper()
	if n := b.count(sel(id)); n != 0 {
		b.t.Errorf("%s is on the page %s", id, b.url())
	}
}

// TestRoles_ViewerSeesNoActionsAndTheAPIRefuses: the role decides which buttons exist. An
// Operator sees the operator's Refresh button and New deployment, a Viewer neither; an Admin sees
// the Audit page in the navigation, a Viewer does not; on the seed deployment's page an Admin has
// Roll back and a Viewer no action at all. Whatever the page shows, the API refuses the Viewer's
// session: refresh, deploy, roll back and pause are 403 from the page itself (approving: the
// Canary test).
func TestRoles_ViewerSeesNoActionsAndTheAPIRefuses(t *testing.T) {
	m := manager(t)
	opPage := "/operators/" + m.Operator
	seedPage := "/deployments/" + m.Seed.ID

	otto := newTab(t, m)
	otto.signIn(managertest.Otto)
	otto.open(opPage, sel("operator-versions"))
	otto.visible(sel("operator-refresh"))
	otto.open("/deployments", sel("deployments-table"))
	otto.visible(sel("new-deployment"))

	alice := newTab(t, m)
	alice.signIn(managertest.Alice)
	alice.visible(sel("nav-audit"))
	alice.open(seedPage, sel("deployment-status"))
	alice.visible(sel("action-rollback"))

	// The Viewer, on the same pages once their data and her identity are shown.
	vera := newTab(t, m)
	vera.signIn(managertest.Vera)
	vera.absent("nav-audit")
	vera.open(opPage, sel("operator-versions"))
	vera.visible(sel("operator-health"))
	vera.waitText(sel("user-subject"), managertest.Vera)
	vera.absent("operator-refresh")
	vera.open("/deployments", sel("deployments-table"))
	vera.visible(`[data-testid="deployment-row"][data-id="` + m.Seed.ID + `"]`)
	vera.waitText(sel("user-subject"), managertest.Vera)
	vera.absent("new-deployment")
	vera.open(seedPage, sel("deployment-status"))
	vera.waitText(sel("deployment-status"), "Completed")
	vera.visible(sel("timeline"))
	vera.waitText(sel("user-subject"), managertest.Vera)
	if n := vera.count(`[data-testid^="action-"]`); n != 0 {
		actions := get(vera, "list the actions", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid^="action-"]')].map((e) => e.dataset.testid)`))
		t.Errorf("the Viewer sees the deployment's actions %v", actions)
	}

	for _, call := range []struct{ method, path, body string }{
		{"POST", "/api/v1/operators/" + m.Operator + "/refresh", ""},
		{"POST", "/api/v1/deployments", fmt.Sprintf(`{"operator": %q, "version": "1.1.0", "clusters": ["dev-1"], "strategy": "Direct"}`, m.Operator)},
		{"POST", "/api/v1/deployments/" + m.Seed.ID + "/rollback", `{"reason": "a viewer tries"}`},
		{"POST", "/api/v1/deployments/" + m.Seed.ID + "/pause", ""},
	} {
		got := vera.apiFromPage(call.method, call.path, call.body)
		if !strings.HasPrefix(got, "403 ") {
			t.Errorf("%s %s with the Viewer's session: %s, want 403", call.method, call.path, got)
		}
	}
}
