package catalyst

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/phasegauge"
)

var (
	environmentsByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_catalyst_environments",
		Help: "Environments by phase, as this operator last reconciled them (0 on replicas that are not the leader).",
	}, []string{"phase"})
	timeToReady = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "slipway_catalyst_environment_time_to_ready_seconds",
		Help:    "Time from an Environment's creation to its first Ready, builds included.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
	})
	buildsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_catalyst_builds_created_total",
		Help: "Build Jobs created, by engine.",
	}, []string{"engine"})
	buildsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_catalyst_builds_finished_total",
		Help: "Build Jobs seen finished, by result: succeeded, failed.",
	}, []string{"result"})
	registryChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_catalyst_registry_checks_total",
		Help: "Registry requests asking whether an environment's image exists, by result: found, missing, error.",
	}, []string{"result"})
	gitFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_catalyst_git_fetches_total",
		Help: "Commits fetched for deploys, by result: fetched, cached (shared with another environment), error.",
	}, []string{"result"})
	deploys = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_catalyst_deploys_total",
		Help: "Deploys, by result: succeeded, failed (reported in the status), error (retried).",
	}, []string{"result"})
	deployDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "slipway_catalyst_deploy_duration_seconds",
		Help:    "Duration of a deploy: fetching the commit, rendering and applying.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	})
	expired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slipway_catalyst_environments_expired_total",
		Help: "Environments deleted because their TTL passed.",
	})
	projectValidations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_catalyst_project_validations_total",
		Help: "Project source validations, by result: ready, failed.",
	}, []string{"result"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_catalyst_reconcile_duration_seconds",
		Help:    "Reconcile duration, by kind: Environment, Project.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"kind"})
)

var allPhases = []catalystv1alpha1.Phase{
	catalystv1alpha1.PhasePending, catalystv1alpha1.PhaseBuilding, catalystv1alpha1.PhaseDeploying,
	catalystv1alpha1.PhaseFailed, catalystv1alpha1.PhaseReady,
}

func init() {
	metrics.Registry.MustRegister(environmentsByPhase, timeToReady, buildsCreated, buildsFinished, registryChecks,
		gitFetches, deploys, deployDuration, expired, projectValidations, reconcileDuration)
}

// observe records one Environment reconcile.
func (r *EnvironmentReconciler) observe(s *envScope, prev catalystv1alpha1.Phase, d time.Duration) {
	reconcileDuration.WithLabelValues("Environment").Observe(d.Seconds())
	env := s.env
	key := client.ObjectKeyFromObject(env)
	if env.Status.Phase != "" {
		phases.Set(key, env.Status.Phase)
	}
	if env.Status.Phase == catalystv1alpha1.PhaseReady && prev != catalystv1alpha1.PhaseReady && r.readyOnce.first(key) &&
		env.Generation == 1 {
		timeToReady.Observe(s.now.Sub(env.CreationTimestamp.Time).Seconds())
	}
}

// phases holds one series per phase: an Environment moves from one count to another and leaves
// its count when it is gone.
var phases = phasegauge.New(environmentsByPhase, allPhases...)

// PhaseCount is the gauge's value for phase (benchmarks and tests read it).
func PhaseCount(p catalystv1alpha1.Phase) float64 { return phases.Count(p) }

// CounterValue reads a counter of this package by its metric name and label values, for tests
// and benchmarks; 0 when unknown.
func CounterValue(name string, labels ...string) float64 {
	m := &dto.Metric{}
	var err error
	switch name {
	case "deploys":
		err = deploys.WithLabelValues(labels...).Write(m)
	case "gitFetches":
		err = gitFetches.WithLabelValues(labels...).Write(m)
	case "registryChecks":
		err = registryChecks.WithLabelValues(labels...).Write(m)
	case "buildsCreated":
		err = buildsCreated.WithLabelValues(labels...).Write(m)
	default:
		return 0
	}
	if err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
