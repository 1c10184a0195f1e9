package health

import "strings"

// Part names, as the problems and the engine's messages give them.
const (
	PartPods     = "pods"
	PartWebhooks = "webhooks"
	PartCRDs     = "crds"
	PartMetrics  = "metrics"
)

// partVerdict is one part of a check as its problems count it.
type partVerdict struct {
	name   string
	health Health
	msgs   []string
}

// parts are the check's parts in a fixed order. Metrics not read are no verdict (the cluster was
// judged on the other parts): they count as Healthy here, their messages still in the detail.
func (h ClusterHealth) parts() []partVerdict {
	metrics := h.Metrics.Health
	if h.Metrics.Read != Passed {
		metrics = Healthy
	}
	return []partVerdict{
		{PartPods, h.Pods.Health, h.Pods.Messages},
		{PartWebhooks, h.Webhooks.Health, h.Webhooks.Messages},
		{PartCRDs, h.CRDs.Health, h.CRDs.Messages},
		{PartMetrics, metrics, h.Metrics.Messages},
	}
}

// UnhealthyParts names the parts of the check that are Unhealthy, in a fixed order: the
// signals that failed it, which a rollback compares with the restored release's.
func (h ClusterHealth) UnhealthyParts() []string {
	var out []string
	for _, p := range h.parts() {
		if p.health == Unhealthy {
			out = append(out, p.name)
		}
	}
	return out
}

// Problems is the check's problems in one line: each part that is not Healthy with its first
// message ("pods Unhealthy: …; crds Degraded: …"); "" when there are none.
func (h ClusterHealth) Problems() string {
	var msgs []string
	for _, p := range h.parts() {
		if p.health == Healthy || p.health == "" {
			continue
		}
		m := p.name + " " + string(p.health)
		if len(p.msgs) > 0 {
			m += ": " + p.msgs[0]
		}
		msgs = append(msgs, m)
	}
	return strings.Join(msgs, "; ")
}
