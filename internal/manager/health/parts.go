package health

// Part names, as UnhealthyParts and the engine's messages give them.
const (
	PartPods     = "pods"
	PartWebhooks = "webhooks"
	PartCRDs     = "crds"
	PartMetrics  = "metrics"
)

// UnhealthyParts names the parts of the check that are Unhealthy, in a fixed order: the
// signals that failed it, which a rollback compares with the restored release's.
func (h ClusterHealth) UnhealthyParts() []string {
	var out []string
	for _, p := range []struct {
		name string
		h    Health
	}{{PartPods, h.Pods.Health}, {PartWebhooks, h.Webhooks.Health}, {PartCRDs, h.CRDs.Health}, {PartMetrics, h.Metrics.Health}} {
		if p.h == Unhealthy {
			out = append(out, p.name)
		}
	}
	return out
}
