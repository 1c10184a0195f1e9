package receiver

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the result label of slipway_werfbundle_webhook_requests_total.
const (
	resultAccepted         = "accepted"
	resultUnauthorized     = "unauthorized"
	resultBadRequest       = "bad_request"
	resultTooLarge         = "too_large"
	resultMethodNotAllowed = "method_not_allowed"
	// resultFailed: the pushes could not all be recorded (503, the sender retries).
	resultFailed = "failed"
)

var (
	webhookRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_werfbundle_webhook_requests_total",
		Help: "Push notification requests received by the WerfBundle receiver, by result.",
	}, []string{"result"})

	webhookTriggers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slipway_werfbundle_webhook_triggers_total",
		Help: "WerfBundles a push notification was recorded on (one per bundle per pushed tag).",
	})

	registerMetricsOnce sync.Once
)

// registerMetrics adds the receiver's metrics to controller-runtime's registry, once per process
// however many Servers are built.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		metrics.Registry.MustRegister(webhookRequests, webhookTriggers)
		// Start every series at zero so rates work from the first request.
		for _, r := range []string{resultAccepted, resultUnauthorized, resultBadRequest, resultTooLarge, resultMethodNotAllowed, resultFailed} {
			webhookRequests.WithLabelValues(r)
		}
	})
}
