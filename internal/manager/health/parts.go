package health

import (
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

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
	health api.HealthState
	msgs   []string
}

// parts are the check's parts in a fixed order. Metrics not read are no verdict (the cluster was
// judged on the other parts): they count as Healthy here, their messages still in the detail.
func parts(h api.OperatorHealthCheck) []partVerdict {
	metrics := h.Metrics.Health
	if h.Metrics.Read != api.VerdictPassed {
		metrics = api.Healthy
	}
	return []partVerdict{
		{PartPods, h.Pods.Health, h.Pods.Messages},
		{PartWebhooks, h.Webhooks.Health, h.Webhooks.Messages},
		{PartCRDs, h.CRDs.Health, h.CRDs.Messages},
		{PartMetrics, metrics, h.Metrics.Messages},
	}
}

// UnhealthyParts names the parts of check h that are Unhealthy, in a fixed order: the
// signals that failed it, which a rollback compares with the restored release's.
func UnhealthyParts(h api.OperatorHealthCheck) []string {
	var out []string
	for _, p := range parts(h) {
		if p.health == api.Unhealthy {
			out = append(out, p.name)
		}
	}
	return out
}

// Problems is check h's problems in one line: each part that is not Healthy with its first
// message ("pods Unhealthy: …; crds Degraded: …"); "" when there are none.
func Problems(h api.OperatorHealthCheck) string {
	var msgs []string
	for _, p := range parts(h) {
		if p.health == api.Healthy || p.health == "" {
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
