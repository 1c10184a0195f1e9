package phasegauge

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

type phase string

func TestGauge_CountsEachObjectOnce(t *testing.T) {
	g := New(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_phase"}, []string{"phase"}), phase("Ready"), phase("Failed"))
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	g.Set(a, "Ready")
	g.Set(a, "Ready")
	g.Set(b, "Ready")
	g.Set(b, "Failed")
	if got := g.Count("Ready"); got != 1 {
		t.Errorf("Ready = %v, want 1", got)
	}
	if got := g.Count("Failed"); got != 1 {
		t.Errorf("Failed = %v, want 1", got)
	}
	g.Forget(a)
	g.Forget(b)
	g.Forget(b)
	if g.Count("Ready") != 0 || g.Count("Failed") != 0 {
		t.Errorf("after forgetting both: Ready %v, Failed %v; want 0 and 0", g.Count("Ready"), g.Count("Failed"))
	}
}
