package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The design's span names of an operator health check (operator-manager-spec.md, Observability,
// the example trace): operator.healthcheck with one child per part.
const (
	SpanOperatorHealthcheck = "operator.healthcheck"
	SpanHealthcheckPods     = "pod.healthcheck"
	SpanHealthcheckWebhooks = "webhook.healthcheck"
	SpanHealthcheckCRDs     = "crd.reconciliation.check"
	// SpanHealthcheckMetrics reads the operator's own metrics (beside the design's three).
	SpanHealthcheckMetrics = "operator.metrics.check"
)

// The check label values of slipway_manager_operator_health_check_duration_seconds.
const (
	HealthCheckAll      = "all"
	HealthCheckPods     = "pods"
	HealthCheckWebhooks = "webhooks"
	HealthCheckCRDs     = "crds"
	HealthCheckMetrics  = "metrics"
)

// Operator health metrics (the design's operators.healthy, operators.unhealthy and the check
// duration histogram), set by the health package.
var (
	OperatorHealthCheckDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_manager_operator_health_check_duration_seconds",
		Help:    "Time one operator health check on one cluster took, by part (all, pods, webhooks, crds, metrics).",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"check"}))

	OperatorsHealthy = register(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slipway_manager_operators_healthy",
		Help: "Operators whose latest health checks are Healthy on every cluster checked.",
	}))

	OperatorsDegraded = register(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slipway_manager_operators_degraded",
		Help: "Operators whose latest health checks are Degraded at worst.",
	}))

	OperatorsUnhealthy = register(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slipway_manager_operators_unhealthy",
		Help: "Operators Unhealthy on at least one cluster in their latest health checks.",
	}))
)

func init() {
	for _, c := range []string{HealthCheckAll, HealthCheckPods, HealthCheckWebhooks, HealthCheckCRDs, HealthCheckMetrics} {
		OperatorHealthCheckDuration.WithLabelValues(c)
	}
}

// ObserveOperatorHealthCheck records the duration of one health check part.
func ObserveOperatorHealthCheck(check string, d time.Duration) {
	OperatorHealthCheckDuration.WithLabelValues(check).Observe(d.Seconds())
}

// SetOperatorHealth sets the operator health gauges.
func SetOperatorHealth(healthy, degraded, unhealthy int) {
	OperatorsHealthy.Set(float64(healthy))
	OperatorsDegraded.Set(float64(degraded))
	OperatorsUnhealthy.Set(float64(unhealthy))
}
