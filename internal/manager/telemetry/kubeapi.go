package telemetry

import "github.com/prometheus/client_golang/prometheus"

// KubeAPICalls are the label values of KubeAPIRequests, always exported: one operator chart
// install or upgrade, a Helm rollback, an uninstall, and BlueGreen's switch and switch_back.
var KubeAPICalls = []string{"install", "rollback", "uninstall", "switch", "switch_back"}

// KubeAPIRequests is how many Kubernetes API requests one cluster call made (discovery, watches
// and readiness polls included): its _sum over its _count is the requests per cluster per call.
var KubeAPIRequests = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "slipway_manager_kube_api_requests",
	Help:    "Kubernetes API requests made by one call into one cluster, by call (install, rollback, uninstall, switch, switch_back).",
	Buckets: []float64{5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000},
}, []string{"call"}))

func init() {
	for _, c := range KubeAPICalls {
		KubeAPIRequests.WithLabelValues(c)
	}
}

// ObserveKubeAPIRequests records the Kubernetes API requests one call into one cluster made.
func ObserveKubeAPIRequests(call string, requests int64) {
	KubeAPIRequests.WithLabelValues(call).Observe(float64(requests))
}
