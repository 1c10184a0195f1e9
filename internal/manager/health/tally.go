package health

import "github.com/slipway-dev/slipway/internal/manager/api"

// Tally counts operators by overall health, the worst of the latest check on each of their
// clusters (latest: by operator name): the operator health gauges. The consecutive-failure count
// that triggers a rollback is kept with each stored check (store.OperatorHealthRecord).
func Tally(latest map[string][]api.HealthState) (healthy, degraded, unhealthy int) {
	for _, hs := range latest {
		switch worst(hs...) {
		case api.Healthy:
			healthy++
		case api.Degraded:
			degraded++
		default:
			unhealthy++
		}
	}
	return healthy, degraded, unhealthy
}
