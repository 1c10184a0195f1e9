package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// registry holds every manager metric plus the Go and process collectors. It is the manager's
// own, not prometheus.DefaultRegisterer, so a library's metrics never appear by surprise.
var registry = prometheus.NewRegistry()

// Registry is the registry /metrics serves.
func Registry() *prometheus.Registry { return registry }

// Handler serves the registry in the Prometheus exposition format. Mount it on its own listener
// or behind auth: it tells how many clusters are unhealthy.
func Handler() http.Handler {
	return promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry})
}

// MustRegister adds collectors to the registry; it panics on a duplicate name, at start-up.
// Part 2's metrics (deployments, rollbacks, operator health) go in a file of this package as
//
//	var DeploymentsTotal = register(prometheus.NewCounterVec(prometheus.CounterOpts{
//		Name: "slipway_manager_deployments_total", Help: "…"}, []string{"strategy", "result"}))
//
// or, from another package, through MustRegister.
func MustRegister(cs ...prometheus.Collector) { registry.MustRegister(cs...) }

// register adds c to the registry and returns it, for package-level metric vars.
func register[C prometheus.Collector](c C) C {
	registry.MustRegister(c)
	return c
}

func init() {
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
}

// The manager's metrics (namespace slipway_manager).
var (
	HTTPRequestDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_manager_http_request_duration_seconds",
		Help:    "Time to answer an API request, by route pattern, method and status code.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method", "code"}))

	ClustersRegisteredTotal = register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slipway_manager_clusters_registered_total",
		Help: "Clusters registered since the process started.",
	}))

	CRDsValidatedTotal = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_manager_crds_validated_total",
		Help: "CRD compatibility validations, by result (compatible, breaking, error).",
	}, []string{"result"}))

	Operators = register(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slipway_manager_operators",
		Help: "Operators registered.",
	}))

	Clusters = register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_manager_clusters",
		Help: "Clusters registered, by last known health (Healthy, Unhealthy, Unknown).",
	}, []string{"health"}))

	ClusterHealthCheckDuration = register(prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "slipway_manager_cluster_health_check_duration_seconds",
		Help:    "Time one cluster health check took.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}))

	RateLimitedTotal = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_manager_rate_limited_total",
		Help: "Requests refused with 429, by route pattern.",
	}, []string{"route"}))
)

// ClusterHealthStates are the label values of slipway_manager_clusters, always exported (0 when
// no cluster is in that state).
var ClusterHealthStates = []string{"Healthy", "Unhealthy", "Unknown"}

func init() {
	for _, h := range ClusterHealthStates {
		Clusters.WithLabelValues(h)
	}
}

// ObserveHTTPRequest records one answered request. route is the mux pattern ("GET
// /api/v1/clusters/{name}", never the raw path); status 0 counts as 200.
func ObserveHTTPRequest(route, method string, status int, elapsed time.Duration) {
	if status == 0 {
		status = http.StatusOK
	}
	HTTPRequestDuration.WithLabelValues(route, method, strconv.Itoa(status)).Observe(elapsed.Seconds())
}

// ClusterRegistered counts one registration.
func ClusterRegistered() { ClustersRegisteredTotal.Inc() }

// CRDValidated counts one validation with its result: "compatible", "breaking" or "error".
func CRDValidated(result string) { CRDsValidatedTotal.WithLabelValues(result).Inc() }

// RateLimited counts one 429 on route.
func RateLimited(route string) { RateLimitedTotal.WithLabelValues(route).Inc() }

// ObserveClusterHealthCheck records how long one cluster's health check took.
func ObserveClusterHealthCheck(elapsed time.Duration) {
	ClusterHealthCheckDuration.Observe(elapsed.Seconds())
}

// SetClusterHealth sets slipway_manager_clusters from a count per health state; states missing
// from counts are set to 0.
func SetClusterHealth(counts map[string]int) {
	for _, h := range ClusterHealthStates {
		Clusters.WithLabelValues(h).Set(float64(counts[h]))
	}
	for h, n := range counts {
		Clusters.WithLabelValues(h).Set(float64(n))
	}
}

// SetOperators sets slipway_manager_operators.
func SetOperators(n int) { Operators.Set(float64(n)) }

// OperatorCounter is the part of the store SetOperatorCount reads.
type OperatorCounter interface {
	OperatorCount(ctx context.Context) (int, error)
}

// SetOperatorCount sets slipway_manager_operators from the store; on a store error the gauge
// keeps its last value (a metric is not worth failing a request for).
func SetOperatorCount(ctx context.Context, s OperatorCounter) {
	if n, err := s.OperatorCount(ctx); err == nil {
		SetOperators(n)
	}
}
