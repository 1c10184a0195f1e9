package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The design's deployment metrics: operators.deployed.total, operators.rollback.total,
// operators.failed.total, operator.deploy.duration, operator.rollback.duration,
// deployments.active (and the queue), in Prometheus form.
var (
	OperatorsDeployedTotal = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_manager_operators_deployed_total",
		Help: "Operator versions deployed to a cluster (one per cluster that became healthy), by strategy.",
	}, []string{"strategy"}))

	OperatorsRollbackTotal = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_manager_operators_rollback_total",
		Help: "Deployments rolled back, by trigger (healthcheck, stage, install, manual) and result (rolledBack, failed).",
	}, []string{"trigger", "result"}))

	OperatorsFailedTotal = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_manager_operators_failed_total",
		Help: "Deployments that ended Failed, by the step that failed (planning, approval, install, rollback).",
	}, []string{"step"}))

	OperatorDeployDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_manager_operator_deploy_duration_seconds",
		Help:    "Time from a deployment's start (after planning and approvals) to its end, by strategy and status.",
		Buckets: []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 14400},
	}, []string{"strategy", "status"}))

	OperatorRollbackDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_manager_operator_rollback_duration_seconds",
		Help:    "Time from a rollback's trigger to its end, by result (rolledBack, failed).",
		Buckets: []float64{.5, 1, 2.5, 5, 10, 20, 30, 60, 180, 600},
	}, []string{"result"}))

	Deployments = register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_manager_deployments",
		Help: "Deployments that are not finished, by status (Queued, WaitingApproval, Planning, Deploying, Validating, RollingBack).",
	}, []string{"status"}))

	DeploymentsActive = register(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slipway_manager_deployments_active",
		Help: "Deployments running now (Planning, Deploying, Validating, RollingBack): the design's deployments.active, bounded by the concurrency limit.",
	}))
)

// DeploymentStates are the label values of slipway_manager_deployments, always exported.
var DeploymentStates = []string{"Queued", "WaitingApproval", "Planning", "Deploying", "Validating", "RollingBack"}

func init() {
	for _, s := range DeploymentStates {
		Deployments.WithLabelValues(s)
	}
}

// SetDeployments sets the deployment gauges from a count per status (statuses missing are 0).
func SetDeployments(counts map[string]int) {
	for _, s := range DeploymentStates {
		Deployments.WithLabelValues(s).Set(float64(counts[s]))
	}
	DeploymentsActive.Set(float64(counts["Planning"] + counts["Deploying"] + counts["Validating"] + counts["RollingBack"]))
}

// ObserveDeployment records a deployment that ended after elapsed.
func ObserveDeployment(strategy, status string, elapsed time.Duration) {
	OperatorDeployDuration.WithLabelValues(strategy, status).Observe(elapsed.Seconds())
}

// ObserveRollback records a rollback that ended after elapsed.
func ObserveRollback(trigger, result string, elapsed time.Duration) {
	OperatorsRollbackTotal.WithLabelValues(trigger, result).Inc()
	OperatorRollbackDuration.WithLabelValues(result).Observe(elapsed.Seconds())
}

// SpanOperatorDeploy is the design's root span of a deployment step: its children are
// operator.validate, cluster.connect, helm.install (crd.apply, controller.deploy),
// operator.healthcheck and operator.rollback.
const SpanOperatorDeploy = "operator.deploy"
