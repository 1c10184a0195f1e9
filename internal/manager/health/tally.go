package health

// Tally counts operators by overall health, the worst of the latest check on each of their
// clusters (latest: by operator name): the operator health gauges. The consecutive-failure count
// that triggers a rollback is kept with each stored check (store.OperatorHealthRecord).
func Tally(latest map[string][]Health) (healthy, degraded, unhealthy int) {
	for _, hs := range latest {
		switch worst(hs...) {
		case Healthy:
			healthy++
		case Degraded:
			degraded++
		default:
			unhealthy++
		}
	}
	return healthy, degraded, unhealthy
}
