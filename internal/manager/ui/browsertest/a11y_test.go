//go:build browser || e2e

package browsertest

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// axeScript is axe-core's browser build, a pinned devDependency of the web UI (web/package.json),
// installed by npm ci (make test runs it first).
var axeScript = filepath.Join("..", "..", "..", "..", "web", "node_modules", "axe-core", "axe.min.js")

// axeTags are the rules run: WCAG 2.0, 2.1 and 2.2, levels A and AA.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"}

var (
	axeOnce sync.Once
	axeSrc  string
	axeErr  error
)

// loadAxe reads axe-core's script once; a missing file fails the test, saying how to install it.
func loadAxe(t *testing.T) string {
	t.Helper()
	axeOnce.Do(func() {
		raw, err := os.ReadFile(axeScript)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			axeErr = fmt.Errorf("axe-core is not installed (no web/node_modules/axe-core/axe.min.js): run cd web && npm ci (make test does)")
		case err != nil:
			axeErr = fmt.Errorf("reading axe-core: %w", err)
		default:
			axeSrc = string(raw)
		}
	})
	if axeErr != nil {
		t.Fatal(axeErr)
	}
	return axeSrc
}

// axeViolation is one rule axe found broken, with the elements that break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  string `json:"target"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

// audit runs axe-core's WCAG 2 A and AA rules on the page as it is now and fails the test with
// every violation (rule, element, what is wrong), naming the page. The script is evaluated over
// the DevTools protocol, which the page's Content-Security-Policy does not govern (it forbids
// inline script); it is injected once per document.
func (b *tab) audit(page string) {
	b.t.Helper()
	src := loadAxe(b.t)
	if !get(b, "look for axe", chromedp.Evaluate[bool](`typeof window.axe === 'object'`)) {
		b.do("inject axe-core", chromedp.Evaluate[chromedp.Void](src))
	}
	tags := `['` + strings.Join(axeTags, `','`) + `']`
	vs := get(b, "run axe on "+page, chromedp.Evaluate[[]axeViolation](`axe.run(document, {runOnly: {type: 'tag', values: `+tags+`},
		resultTypes: ['violations']}).then((r) => r.violations.map((v) => ({id: v.id, impact: v.impact || '', help: v.help,
		nodes: v.nodes.map((n) => ({target: n.target.map(String).join(' '), summary: n.failureSummary || ''}))})))`, chromedp.EvalAwaitPromise))
	for _, v := range vs {
		for _, n := range v.Nodes {
			b.t.Errorf("%s: %s (%s) at %s: %s\n\t%s", page, v.ID, v.Impact, n.Target, v.Help, strings.ReplaceAll(n.Summary, "\n", "\n\t"))
		}
	}
}

// auditSchemes audits the page in the light colour scheme, then in the dark one.
func (b *tab) auditSchemes(page string) {
	b.t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		b.colorScheme(scheme)
		b.audit(page + " (" + scheme + ")")
	}
}

// TestAccessibility_EveryPage runs axe-core's WCAG 2 A/AA rules in chromium on every main page
// of the UI, in the light and in the dark colour scheme: the sign-in page (and its refusal),
// Fleet, Deployments (table and tiles), a deployment with its rollback dialog open, New
// deployment (with its field errors, then with the dry-run plan), Approvals (empty, and bob's
// inbox with a request of alice's and its reject dialog; alice's deployment waiting for it),
// Operators, an operator, CRDs, the breaking CRD diff, Clusters, a cluster and Audit. Every
// violation fails it, naming the page, the rule and the element.
func TestAccessibility_EveryPage(t *testing.T) {
	m := manager(t)
	b := newTab(t, m)
	b.open("/login", sel("login-token"))
	b.auditSchemes("sign-in")
	b.do("paste a forged token",
		chromedp.SendKeys(chromedp.CSS(sel("login-token")), "not-a-token"),
		chromedp.Click(chromedp.CSS(sel("login-submit"))))
	b.visible(sel("login-error"))
	b.auditSchemes("sign-in refused")
	b.signIn(managertest.Alice)

	pages := []struct{ name, path, ready string }{
		{"Fleet", "/", sel("fleet-cell")},
		{"Deployments", "/deployments", sel("deployment-row")},
		{"Deployments as tiles", "/deployments?view=tiles", sel("deployment-tile")},
		{"Approvals", "/approvals", sel("approvals-empty") + "," + sel("approvals-mine")},
		{"Operators", "/operators", sel("operators-table")},
		{"an operator", "/operators/" + m.Operator, sel("operator-versions")},
		{"CRDs", "/crds", sel("crds-table")},
		{"a CRD diff", "/crds/" + managertest.WidgetCRD, sel("crd-diff-verdict")},
		{"Clusters", "/clusters", sel("clusters-table")},
		{"a cluster", "/clusters/dev-1", sel("cluster-operators")},
		{"Audit", "/audit", sel("audit-row")},
	}
	for _, p := range pages {
		b.open(p.path, p.ready)
		b.auditSchemes(p.name)
	}

	b.open("/deployments/"+m.Seed.ID, sel("deployment-facts"))
	b.visible(sel("event-row"))
	b.auditSchemes("a deployment")
	b.click(sel("action-rollback"))
	b.visible(`[role="dialog"]`)
	b.auditSchemes("a deployment's rollback dialog")
	b.do("close the dialog", chromedp.KeyEvent(kb.Escape))
	b.gone(`[role="dialog"]`)

	b.auditNewDeployment(m)
	auditApprovalInbox(t, m, b)
	b.colorScheme("")
}

// auditNewDeployment audits the New deployment form planned with nothing chosen (its field
// errors), then with a Canary of the breaking version on Dev planned (the dry run's plan).
func (b *tab) auditNewDeployment(m *managertest.Manager) {
	b.t.Helper()
	b.open("/deployments/new?strategy=Canary", sel("new-deployment-form"))
	b.click(sel("plan-button"))
	b.visible(".field-error")
	b.auditSchemes("New deployment with field errors")
	b.choose(sel("field-operator"), m.Operator)
	b.choose(sel("field-version"), managertest.BreakingVersion)
	b.click(sel("target-by-environments"))
	b.click(sel("target-environment-Dev"))
	b.click(sel("plan-button"))
	b.visible(sel("plan-crds"))
	b.auditSchemes("New deployment with its plan")
}

// auditApprovalInbox has alice (tab alice) ask for the compatible version on dev-1, which waits
// for an Admin's approval: it audits her deployment page waiting, and bob's Approvals inbox
// listing it (with the CRD report and the migration note) and its reject dialog; then alice
// cancels it through the API before anything is installed.
func auditApprovalInbox(t *testing.T, m *managertest.Manager, alice *tab) {
	t.Helper()
	dep := m.Deploy(t, managertest.Alice, map[string]any{"operator": m.Operator, "version": managertest.CompatibleVersion,
		"clusters": []string{"dev-1"}, "strategy": "Direct"})
	cancelled := false
	cancel := func() {
		if cancelled {
			return
		}
		cancelled = true
		m.Must(t, "DELETE", "/api/v1/deployments/"+dep.ID, managertest.Alice, nil, http.StatusAccepted)
		m.WaitStatus(t, dep.ID, "Cancelled", time.Minute)
	}
	t.Cleanup(cancel)

	alice.open("/deployments/"+dep.ID, `[data-testid="waiting"][data-reason="approval"]`)
	alice.auditSchemes("a deployment waiting for approval")

	bob := newTab(t, m)
	bob.signIn(managertest.Bob)
	row := `[data-testid="approvals-mine"] [data-testid="approval-row"][data-deployment-id="` + dep.ID + `"]`
	bob.open("/approvals", row)
	bob.auditSchemes("Approvals with an inbox")
	bob.click(row + ` [data-testid="approval-reject"]`)
	bob.visible(`[role="dialog"]`)
	bob.auditSchemes("Approvals' reject dialog")
	bob.do("close the dialog", chromedp.KeyEvent(kb.Escape))
	bob.gone(`[role="dialog"]`)
	bob.colorScheme("")
	cancel()
}

// focusStop is where the focus is after one Tab, and whether it shows.
type focusStop struct {
	// Where: "nav", "filters", "grid", "main" or "" (the page's body: focus left the page).
	Where string `json:"where"`
	What  string `json:"what"`
	// Indicator: a focus ring is painted (an outline of some width, or a box shadow).
	Indicator bool   `json:"indicator"`
	Style     string `json:"style"`
}

// focusNow reads the focused element.
const focusNow = `(() => {
	const el = document.activeElement;
	if (!el || el === document.body) return {where: '', what: 'body', indicator: false, style: ''};
	const where = el.closest('nav') ? 'nav' : el.closest('form[role="search"]') ? 'filters' : el.closest('[role="grid"]') ? 'grid' : el.closest('main') ? 'main' : 'other';
	const s = getComputedStyle(el);
	const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
	const shadow = s.boxShadow !== 'none' && s.boxShadow !== '';
	const name = (el.getAttribute('aria-label') || el.innerText || el.value || '').trim().split('\n')[0].slice(0, 40);
	return {where, what: el.tagName.toLowerCase() + (el.dataset.testid ? '[' + el.dataset.testid + ']' : '') + ' "' + name + '"',
		indicator: outline || shadow, style: 'outline ' + s.outlineStyle + ' ' + s.outlineWidth + ' ' + s.outlineColor + '; box-shadow ' + s.boxShadow};
})()`

// TestAccessibility_KeyboardWalkOnFleet tabs through the Fleet page from its top, as a keyboard
// user: the focus reaches the skip link, the navigation, the filters and the grid (one tab stop,
// then the arrow keys inside it), and every element it lands on shows a focus ring, in the light
// and the dark colour scheme.
func TestAccessibility_KeyboardWalkOnFleet(t *testing.T) {
	m := manager(t)
	b := newTab(t, m)
	b.signIn(managertest.Alice)
	for _, scheme := range []string{"light", "dark"} {
		b.colorScheme(scheme)
		b.open("/fleet", sel("fleet-cell"))
		stops := b.tabThrough(scheme, 40)
		t.Logf("%s: %d tab stops: %+v", scheme, len(stops), stops)
		seen := map[string]int{}
		for _, s := range stops {
			seen[s.Where]++
		}
		for _, want := range []string{"nav", "filters", "grid"} {
			if seen[want] == 0 {
				t.Errorf("%s: Tab never reached the %s; the stops: %+v", scheme, want, stops)
			}
		}
		if seen["grid"] > 1 {
			t.Errorf("%s: the grid takes %d tab stops, want one (the arrow keys move inside it)", scheme, seen["grid"])
		}
		// Inside the grid, ArrowRight moves to the first cell, which shows its ring too.
		b.open("/fleet", sel("fleet-cell"))
		b.tabTo("grid", len(stops)+1)
		b.do("press ArrowRight", chromedp.KeyEvent(kb.ArrowRight))
		cell := get(b, "read the focus", chromedp.Evaluate[focusStop](focusNow))
		if cell.Where != "grid" || !strings.Contains(cell.What, m.Operator) || !cell.Indicator {
			t.Errorf("%s: after ArrowRight in the grid the focus is on %+v: want a cell of %s with a focus ring", scheme, cell, m.Operator)
		}
	}
	b.colorScheme("")
}

// tabThrough presses Tab from the top of the page until the focus leaves the page (or max
// presses) and returns each stop; a stop without a focus ring fails the test.
func (b *tab) tabThrough(scheme string, max int) []focusStop {
	b.t.Helper()
	var stops []focusStop
	for range max {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		s := get(b, "read the focus", chromedp.Evaluate[focusStop](focusNow))
		if s.Where == "" {
			break
		}
		if !s.Indicator {
			b.t.Errorf("%s: the focused %s (in %s) shows no focus ring: %s", scheme, s.What, s.Where, s.Style)
		}
		stops = append(stops, s)
	}
	if len(stops) == max {
		b.t.Errorf("%s: %d Tabs never left the page: a keyboard trap? %+v", scheme, max, stops)
	}
	return stops
}

// tabTo presses Tab from the top of the page until the focus is in where, at most max times.
func (b *tab) tabTo(where string, max int) {
	b.t.Helper()
	for range max {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		if get(b, "read the focus", chromedp.Evaluate[focusStop](focusNow)).Where == where {
			return
		}
	}
	b.t.Fatalf("%d Tabs never reached the %s", max, where)
}
