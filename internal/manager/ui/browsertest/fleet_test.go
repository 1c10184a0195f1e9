//go:build browser || e2e

package browsertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// fleetCell is one cell of the Fleet grid as the page shows it.
type fleetCell struct {
	Operator string `json:"operator"`
	Cluster  string `json:"cluster"`
	Health   string `json:"health"`
	Drift    string `json:"drift"`
	Text     string `json:"text"`
	Href     string `json:"href"`
}

// fleetCells waits until the grid shows want cells of the operator and returns them in the
// page's order (rows, then columns).
func (b *tab) fleetCells(operator string, want int) []fleetCell {
	b.t.Helper()
	return get(b, fmt.Sprintf("wait for %d cells of %s", want, operator), chromedp.PollFunction[[]fleetCell](`(op, want) => {
		const cells = [...document.querySelectorAll('[data-testid="fleet-cell"]')]
			.filter((c) => c.dataset.operator === op)
			.map((c) => ({operator: c.dataset.operator, cluster: c.dataset.cluster, health: c.dataset.health,
				drift: c.dataset.drift || '', text: c.innerText, href: c.querySelector('a')?.getAttribute('href') || ''}));
		return cells.length === want ? cells : false;
	}`, chromedp.WithPollingArgs(operator, want), chromedp.WithPollingTimeout(waitTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// choose selects value in the <select> sel the way a person's pick does: the value changes and
// a change event bubbles (React's onChange).
func (b *tab) choose(sel, value string) {
	b.t.Helper()
	ok := get(b, fmt.Sprintf("choose %q in %s", value, sel), chromedp.PollFunction[bool](`(sel, v) => {
		const el = document.querySelector(sel);
		if (!el || ![...el.options].some((o) => (o.value || o.text) === v)) return false;
		Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set.call(el, v);
		el.dispatchEvent(new Event('change', {bubbles: true}));
		return el.value === v;
	}`, chromedp.WithPollingArgs(sel, value), chromedp.WithPollingTimeout(waitTimeout)))
	if !ok {
		b.t.Fatalf("%s did not take %q", sel, value)
	}
}

// TestFleet_SeededFleetWithoutRegistering signs in and sees the fleet the harness registered
// through the API, nothing registered by hand in the browser: widget-operator on the four
// clusters grouped Dev, Staging, Production, each cell 1.0.0, Healthy and behind 2.0.0; the
// environment filter lives in the address (a deep link shows the same), and a cell leads to the
// deployment that installed it.
func TestFleet_SeededFleetWithoutRegistering(t *testing.T) {
	m := manager(t)
	b := newTab(t, m)
	b.signIn(managertest.Alice)
	b.visible(sel("fleet-grid"))
	for _, env := range []string{"Dev", "Staging", "Production"} {
		b.visible(sel("fleet-group-" + env))
	}
	cells := b.fleetCells(m.Operator, 4)
	var order []string
	for _, c := range cells {
		order = append(order, c.Cluster)
		if c.Health != "Healthy" || c.Drift != "behind" || !strings.Contains(c.Text, managertest.SeedVersion) ||
			!strings.Contains(c.Text, managertest.BreakingVersion) {
			t.Errorf("cell %s: health %s, drift %q, text %q; want Healthy, 1.0.0 behind 2.0.0", c.Cluster, c.Health, c.Drift, c.Text)
		}
		if c.Href != "/deployments/"+m.Seed.ID {
			t.Errorf("cell %s links to %q, want the seed deployment", c.Cluster, c.Href)
		}
	}
	if want := []string{"dev-1", "dev-2", "staging-1", "prod-1"}; !slices.Equal(order, want) {
		t.Fatalf("clusters in the order %v, want %v (environment, then name)", order, want)
	}
	summary := b.waitText(sel("fleet-summary"), "4 installed")
	if !strings.Contains(summary, "4 behind the latest") {
		t.Errorf("summary %q: want 4 behind the latest", summary)
	}
	b.screenshot("fleet.png")

	b.choose(sel("filter-environment"), "Production")
	b.waitURL(`[?&]environment=Production`)
	if prod := b.fleetCells(m.Operator, 1); prod[0].Cluster != "prod-1" {
		t.Fatalf("filtered to Production: %+v", prod)
	}

	// The same filter as a deep link, in a new page.
	b.open("/fleet?environment=Dev", sel("fleet-grid"))
	dev := b.fleetCells(m.Operator, 2)
	if dev[0].Cluster != "dev-1" || dev[1].Cluster != "dev-2" {
		t.Fatalf("the deep link to Dev shows %+v", dev)
	}
	if v := get(b, "read the filter", chromedp.Value(chromedp.CSS(sel("filter-environment")))); v != "Dev" {
		t.Fatalf("the environment filter shows %q on the deep link, want Dev", v)
	}

	b.click(`[data-testid="fleet-cell"][data-cluster="dev-2"] a`)
	b.waitURL("^/deployments/" + m.Seed.ID + "$")
}
