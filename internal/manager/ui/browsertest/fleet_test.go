//go:build browser || e2e

package browsertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/health"
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

// groupHeader is an environment group's header as the browser lays it out and paints it.
type groupHeader struct {
	Env   string `json:"env"`
	Text  string `json:"text"`
	Name  string `json:"name"`
	Title string `json:"title"`
	// Inset is how far the label starts from the group's left edge (its border and padding).
	Inset float64 `json:"inset"`
	// Inside: the label's box lies within the group's (nothing cut off at the bottom or right).
	Inside bool `json:"inside"`
	// Lines is how many line boxes the label's text takes.
	Lines int `json:"lines"`
	// Cut: the label is cut with an ellipsis (its text wider than its box).
	Cut bool `json:"cut"`
	// Background is the group's computed background; Contrast its ratio with the label's colour.
	Background string  `json:"background"`
	Contrast   float64 `json:"contrast"`
}

// groupHeaders reads the Fleet grid's environment headers.
func (b *tab) groupHeaders() []groupHeader {
	b.t.Helper()
	return get(b, "read the environment headers", chromedp.Evaluate[[]groupHeader](`(() => {
		const lum = (c) => {
			const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map((v) => {
				const s = Number(v) / 255;
				return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
			});
			return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
		};
		return [...document.querySelectorAll('[data-testid^="fleet-group-"]')].map((g) => {
			const l = g.querySelector('.fleet-group-label');
			const gr = g.getBoundingClientRect(), lr = l.getBoundingClientRect();
			const range = document.createRange();
			range.selectNodeContents(l);
			const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
			const bg = getComputedStyle(g).backgroundColor, fg = getComputedStyle(l).color;
			const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
			return {env: g.dataset.testid.slice('fleet-group-'.length), text: l.textContent, name: g.getAttribute('aria-label') || '',
				title: g.title, inset: lr.left - gr.left, lines, cut: l.scrollWidth > l.clientWidth,
				inside: lr.left >= gr.left && lr.right <= gr.right + 0.5 && lr.top >= gr.top && lr.bottom <= gr.bottom + 0.5,
				background: bg, contrast: (hi + 0.05) / (lo + 0.05)};
		});
	})()`))
}

// checkGroupHeaders checks the environment headers in the colour scheme the page shows now:
// the short labels want, each on one line, uncut, at its group's left, inside it, with a text
// contrast of at least 4.5 (WCAG AA), and the whole ("Staging · 1 cluster") as name and title.
func (b *tab) checkGroupHeaders(scheme string, want []string) []groupHeader {
	b.t.Helper()
	hs := b.groupHeaders()
	var texts []string
	for _, h := range hs {
		texts = append(texts, h.Text)
		full := strings.Replace(h.Text, " · 1", " · 1 cluster", 1)
		if full == h.Text {
			full += " clusters"
		}
		if h.Lines != 1 || h.Cut || !h.Inside || h.Inset > 12 || h.Contrast < 4.5 || h.Name != full || h.Title != full {
			b.t.Errorf("%s: the %s header %+v: want one uncut line inside the group, at its left (inset ≤ 12), contrast ≥ 4.5, named and titled %q",
				scheme, h.Env, h, full)
		}
	}
	if !slices.Equal(texts, want) {
		b.t.Errorf("%s: environment headers %q, want %q", scheme, texts, want)
	}
	return hs
}

// colorScheme makes the page's prefers-color-scheme scheme ("dark", "light"; "" for the
// browser's own).
func (b *tab) colorScheme(scheme string) {
	b.t.Helper()
	params := emulation.SetEmulatedMediaParams{}
	if scheme != "" {
		params.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	b.do("prefer the colour scheme "+scheme, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, params)
		return err
	}))
	want := scheme == "dark"
	if scheme != "" {
		get(b, "wait for the "+scheme+" scheme", chromedp.Poll[bool](fmt.Sprintf(`matchMedia('(prefers-color-scheme: dark)').matches === %t`, want),
			chromedp.WithPollingTimeout(waitTimeout)))
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
	// The grid is as tall as its rows: no empty frame below a small fleet.
	if gap := get(b, "measure the grid", chromedp.Evaluate[float64](`(() => {
		const g = document.querySelector('[data-testid="fleet-grid"]');
		return g.clientHeight - g.querySelector('.fleet-canvas').offsetHeight;
	})()`)); gap > 1 {
		t.Errorf("the grid is %.0f px taller than its rows", gap)
	}
	// The environment headers in both colour schemes: each on one line inside its group, legible.
	heads := []string{"Dev · 2", "Staging · 1", "Production · 1"}
	b.colorScheme("light")
	light := b.checkGroupHeaders("light", heads)
	b.colorScheme("dark")
	dark := b.checkGroupHeaders("dark", heads)
	for i := range min(len(light), len(dark)) {
		if light[i].Background == dark[i].Background {
			t.Errorf("the %s header is %s in both schemes: the dark theme did not apply", light[i].Env, light[i].Background)
		}
	}
	b.screenshot("fleet-dark.png")
	b.colorScheme("")

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

// TestFleet_OneBadClusterIsOneBadCell makes widget-operator Degraded on prod-1 alone (a pod of
// its release that can never be scheduled, so one of two pods is not Ready; Degraded asks no
// rollback) and sees that one cell turn Degraded on the open page while the other three stay
// Healthy, the summary count it, and the health filter find it; then the pod goes and the cell
// is Healthy again.
func TestFleet_OneBadClusterIsOneBadCell(t *testing.T) {
	m := manager(t)
	prod := m.Clusters[slices.IndexFunc(m.Clusters, func(c managertest.Cluster) bool { return c.Name == "prod-1" })]
	kube, err := kubernetes.NewForConfig(prod.Server.Config)
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, m)
	b.signIn(managertest.Alice)
	b.visible(sel("fleet-grid"))
	b.fleetCells(m.Operator, 4)

	stuck := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m.Operator + "-stuck", Namespace: m.Operator,
			Labels: map[string]string{health.InstanceLabel: m.Operator}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"slipway.dev/no-such-node": "true"},
			Containers: []corev1.Container{{Name: "manager", Image: "registry.example/stuck:1"}}},
	}
	ctx := context.Background()
	if _, err := kube.CoreV1().Pods(stuck.Namespace).Create(ctx, stuck, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		if err := kube.CoreV1().Pods(stuck.Namespace).Delete(ctx, stuck.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Errorf("removing the stuck pod: %v", err)
		}
	}
	t.Cleanup(remove)

	// The page refreshes the fleet by itself: no reload.
	b.waitText(`[data-testid="fleet-cell"][data-cluster="prod-1"]`, "Degraded")
	for _, c := range b.fleetCells(m.Operator, 4) {
		if want := map[bool]string{true: "Degraded", false: "Healthy"}[c.Cluster == "prod-1"]; c.Health != want {
			t.Errorf("cell %s is %s, want %s", c.Cluster, c.Health, want)
		}
	}
	b.waitText(sel("fleet-summary"), "1 degraded or unhealthy")
	b.choose(sel("filter-health"), "Degraded")
	b.waitURL(`[?&]health=Degraded`)
	if bad := b.fleetCells(m.Operator, 1); bad[0].Cluster != "prod-1" {
		t.Fatalf("the Degraded filter shows %+v", bad)
	}

	remove()
	b.choose(sel("filter-health"), "")
	b.waitText(`[data-testid="fleet-cell"][data-cluster="prod-1"]`, "Healthy")
	b.waitText(sel("fleet-summary"), "0 degraded or unhealthy")
}
