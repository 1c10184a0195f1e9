//go:build browser || e2e

package browsertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
