package webapp

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator/phasegauge"
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
}

// phases holds one series per phase: a WebApp moves from one count to another and leaves its
// count when it is gone.
var phases = phasegauge.New(webAppsByPhase, allPhases...)

// PhaseCount is the gauge's value for phase (benchmarks and tests read it).
func PhaseCount(p webappv1.Phase) float64 { return phases.Count(p) }
