//go:build browser || e2e

package browsertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// TestCRDs_BreakingDiff finds the Widget CRD from the CRDs list as a Viewer and reads the change
// 2.0.0 makes: the verdict is breaking, the breaking changes are listed first and counted in the
// verdict (among them spec.legacy removed, spec.count's type changed, spec.tls.secretName
// required, blue dropped from spec.color), the side-by-side schema marks the removed and changed fields as breaking, and the
// migration note of 2.0.0 shows inline with its link. Choosing 1.0.0 → 1.1.0 shows a compatible
// change, in the address; the address of the breaking pair opens it again.
func TestCRDs_BreakingDiff(t *testing.T) {
	m := manager(t)
	b := newTab(t, m)
	b.signIn(managertest.Vera)
	b.click(sel("nav-crds"))
	row := `[data-testid="crd-row"][data-crd="` + managertest.WidgetCRD + `"]`
	b.click(row + " a")
	b.waitURL("^/crds/" + managertest.WidgetCRD)

	// The newest revision beside the one before it: 1.1.0 → 2.0.0.
	b.waitText(sel("crd-diff")+" h2", "1.1.0 → 2.0.0")
	verdict := b.waitText(sel("crd-diff-verdict"), "breaking")
	changes := get(b, "read the changes", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="crd-changes"] li')]
		.map((li) => li.dataset.breaking + ' ' + li.innerText)`))
	breaking, compatibleSeen := 0, false
	for _, c := range changes {
		switch {
		case strings.HasPrefix(c, "true "):
			breaking++
			if compatibleSeen {
				t.Errorf("breaking change %q is listed after a compatible one", c)
			}
		default:
			compatibleSeen = true
		}
	}
	all := strings.Join(changes, "\n")
	for _, want := range []string{"legacy", "count", "secretName", "blue"} {
		if !strings.Contains(all, want) {
			t.Errorf("no change names %s:\n%s", want, all)
		}
	}
	if breaking < 4 || !strings.Contains(verdict, fmt.Sprintf("%d changes", breaking)) {
		t.Errorf("verdict %q with %d breaking changes listed, want the same count, at least 4:\n%s", verdict, breaking, all)
	}
	for path, status := range map[string]string{"spec.legacy": "removed", "spec.count": "changed"} {
		r := `[data-testid="crd-diff-row"][data-path$="` + path + `"]`
		b.visible(r)
		got := get(b, "read the row of "+path, chromedp.Attributes(chromedp.CSS(r)))
		if got["data-status"] != status || got["data-breaking"] != "true" {
			t.Errorf("the schema row of %s: %s, breaking %s; want %s and breaking", path, got["data-status"], got["data-breaking"], status)
		}
	}
	note := b.waitText(sel("crd-migration-notes"), "spec.legacy")
	if !strings.Contains(note, "2.0.0") {
		t.Errorf("migration notes %q: want 2.0.0's", note)
	}
	b.visible(sel("crd-migration-notes") + ` a[href="https://slipway.example/docs/widgets-v2"]`)
	// The note is markdown, shown formatted: no backticks or asterisks left, code and bold instead.
	b.waitText(sel("crd-migration-notes")+" code", "spec.legacy")
	b.waitText(sel("crd-migration-notes")+" strong", "blue")
	b.waitText(`[data-testid="crd-revision"][data-version="2.0.0"] code`, "spec.tls.secretName")
	if strings.ContainsAny(note, "`*") {
		t.Errorf("migration notes %q: the markdown's marks are shown, not rendered", note)
	}
	// The revision history's short cells keep to one line ("widget-operator", "1.1.0 → 2.0.0").
	for _, l := range get(b, "read the revision history's links", chromedp.Evaluate[[]struct {
		Text  string `json:"text"`
		Lines int    `json:"lines"`
	}](`[...document.querySelectorAll('[data-testid="crd-revision"] td:not(.crd-note) a')].map((a) =>
		({text: a.textContent, lines: new Set([...a.getClientRects()].map((r) => Math.round(r.top))).size}))`)) {
		if l.Lines != 1 {
			t.Errorf("the revision history's link %q takes %d lines, want 1", l.Text, l.Lines)
		}
	}
	b.screenshot("crd-diff.png")

	// Another pair, chosen on the page: compatible, and in the address.
	b.choose(sel("crd-from"), managertest.SeedVersion)
	b.choose(sel("crd-to"), managertest.CompatibleVersion)
	b.waitURL(`from=1\.0\.0.*to=1\.1\.0|to=1\.1\.0.*from=1\.0\.0`)
	b.waitText(sel("crd-diff-verdict"), "compatible")

	// The breaking pair's deep link.
	b.open("/crds/"+managertest.WidgetCRD+"?from=1.0.0&to=2.0.0", sel("crd-diff"))
	b.waitText(sel("crd-diff")+" h2", "1.0.0 → 2.0.0")
	b.waitText(sel("crd-diff-verdict"), "breaking")
}
