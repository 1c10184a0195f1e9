package webapp

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
)

var (
	webAppsByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_webapp_phase",
		Help: "WebApps by phase, as this operator last reconciled them (0 on replicas that are not the leader).",
	}, []string{"phase"})
	applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_webapp_applies_total",
		Help: "Server-side applies sent, by kind (Deployment, Service); flat while nothing changes.",
	}, []string{"kind"})
)

var allPhases = []webappv1.Phase{
	webappv1.PhaseReconciling, webappv1.PhaseWaitingForPods, webappv1.PhaseReady,
	webappv1.PhaseScaling, webappv1.PhaseDeleting, webappv1.PhaseFailed,
}

func init() {
	metrics.Registry.MustRegister(webAppsByPhase, applies)
	for _, p := range allPhases {
		webAppsByPhase.WithLabelValues(string(p))
	}
}

// phases remembers each WebApp's last phase so the gauge holds one series per phase: a WebApp
// moves from one count to another, and leaves its count when it is gone.
var phases = &phaseTracker{last: map[types.NamespacedName]webappv1.Phase{}}

type phaseTracker struct {
	mu   sync.Mutex
	last map[types.NamespacedName]webappv1.Phase
}

func (t *phaseTracker) set(key types.NamespacedName, p webappv1.Phase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.last[key]
	if ok && old == p {
		return
	}
	if ok {
		webAppsByPhase.WithLabelValues(string(old)).Dec()
	}
	t.last[key] = p
	webAppsByPhase.WithLabelValues(string(p)).Inc()
}

func (t *phaseTracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.last[key]; ok {
		webAppsByPhase.WithLabelValues(string(old)).Dec()
		delete(t.last, key)
	}
}

// PhaseCount is the gauge's value for phase (benchmarks and tests read it).
func PhaseCount(p webappv1.Phase) float64 {
	m := &dto.Metric{}
	if err := webAppsByPhase.WithLabelValues(string(p)).Write(m); err != nil {
		return 0
	}
	return m.GetGauge().GetValue()
}
