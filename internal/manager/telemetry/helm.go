package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HelmInstallDuration is the design's helm.install.duration: one operator install or upgrade
// into one cluster, CRD application and the wait for readiness included.
var HelmInstallDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "slipway_manager_helm_install_duration_seconds",
	Help:    "Time one operator chart install or upgrade into one cluster took (CRDs, release, readiness), by result (success, failure).",
	Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
}, []string{"result"}))

// ObserveHelmInstall records one install's duration; err nil counts as success.
func ObserveHelmInstall(err error, elapsed time.Duration) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	HelmInstallDuration.WithLabelValues(result).Observe(elapsed.Seconds())
}
