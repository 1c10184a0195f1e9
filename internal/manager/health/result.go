package health

import (
	"encoding/json"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// The checker's results are the API's types (package api: api.OperatorHealthCheck and its
// parts, the health values and verdicts): the check builds them, the engine stores them, the
// server answers with them. The rules that set them live here.

func rank(h api.HealthState) int {
	switch h {
	case api.Healthy:
		return 0
	case api.Degraded, api.HealthUnknown:
		return 1
	default:
		return 2
	}
}

// worst is the worst of hs; Healthy when hs is empty. Unknown (metrics not read) ranks as
// Degraded: no verdict, never a pass.
func worst(hs ...api.HealthState) api.HealthState {
	w := api.Healthy
	for _, h := range hs {
		if rank(h) > rank(w) {
			w = h
		}
	}
	return w
}

// Result is one Checker.Check: the cluster's health as the API shows it, and what the check saw.
type Result struct {
	api.OperatorHealthCheck
	// Observed is what the check saw, for the next baseline (nil when a CRD could not be
	// listed); not part of the response.
	Observed *Baseline `json:"-"`
}

// summarize sets the design's one-value fields from the parts' details.
func summarize(h *api.OperatorHealthCheck) {
	h.ControllerPods = h.Pods.Ready
	h.WebhookStatus = h.Webhooks.State()
	h.CRDReconciliation = h.CRDs.State()
}

// Who a failing resource blames (api.ResourceExample.Blame).
const (
	BlameOperator = "operator"
	BlameTenant   = "tenant"
)

// Overall is the OperatorHealth of operator over the given cluster results (sorted as given).
func Overall(operator string, clusters []api.OperatorHealthCheck) api.OperatorHealth {
	oh := api.OperatorHealth{OperatorName: operator, OverallHealth: api.Unhealthy, Clusters: clusters}
	if oh.Clusters == nil {
		oh.Clusters = []api.OperatorHealthCheck{}
	}
	if len(clusters) > 0 {
		hs := make([]api.HealthState, len(clusters))
		for i, c := range clusters {
			hs[i] = c.Health
		}
		oh.OverallHealth = worst(hs...)
	}
	return oh
}

// DecodeResult reads a stored check (store.OperatorHealth.Result, Check's result as JSON). It
// also reads the shape checks were stored in before the design's one-value fields, with the
// details under controllerPods, webhookStatus and crdReconciliation, so that checks stored by
// an older manager still answer in the design's shape.
func DecodeResult(raw []byte) (api.OperatorHealthCheck, error) {
	var probe struct {
		ControllerPods json.RawMessage `json:"controllerPods"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return api.OperatorHealthCheck{}, err
	}
	var h api.OperatorHealthCheck
	if len(probe.ControllerPods) == 0 || probe.ControllerPods[0] != '{' {
		err := json.Unmarshal(raw, &h)
		return h, err
	}
	var old struct {
		ClusterName string                   `json:"clusterName"`
		Health      api.HealthState          `json:"health"`
		LastChecked time.Time                `json:"lastChecked"`
		Pods        api.PodsStatus           `json:"controllerPods"`
		Webhooks    api.WebhooksStatus       `json:"webhookStatus"`
		CRDs        api.ReconciliationStatus `json:"crdReconciliation"`
	}
	if err := json.Unmarshal(raw, &old); err != nil {
		return api.OperatorHealthCheck{}, err
	}
	h = api.OperatorHealthCheck{ClusterName: old.ClusterName, Health: old.Health, LastChecked: old.LastChecked,
		Pods: old.Pods, Webhooks: old.Webhooks, CRDs: old.CRDs}
	summarize(&h)
	return h, nil
}
