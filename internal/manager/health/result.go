package health

import (
	"encoding/json"
	"time"
)

// Health is the health of a part, a cluster or an operator.
//
// The rule: a part is Unhealthy when it found a fault that hurts users (no Ready controller pod,
// a pod in CrashLoopBackOff or restarted 3 times in 5 minutes, a webhook that does not answer 200
// within 1 s or whose certificate is expired or does not verify, 5 % or more of the custom
// resources failing by the operator's fault: not reconciled or newly failing; the operator's
// reconcile errors or panics up against its baseline: see MetricsStatus); Degraded when it found
// a lesser fault (some pods not Ready, a container over its limits, a few resources failing by
// the operator's fault) or could not run at all (the API failed: "not checked"); Healthy when it
// ran and found nothing. A cluster is its worst part (the metrics part only when they were read);
// an operator is its worst cluster (Unhealthy when it has none).
type Health string

// The health values.
const (
	Healthy   Health = "Healthy"
	Degraded  Health = "Degraded"
	Unhealthy Health = "Unhealthy"
	// Unknown is the metrics part's health when they were not read: no verdict, never a pass.
	// A cluster's health leaves it out.
	Unknown Health = "Unknown"
)

func rank(h Health) int {
	switch h {
	case Healthy:
		return 0
	case Degraded, Unknown:
		return 1
	default:
		return 2
	}
}

// worst is the worst of hs; Healthy when hs is empty.
func worst(hs ...Health) Health {
	w := Healthy
	for _, h := range hs {
		if rank(h) > rank(w) {
			w = h
		}
	}
	return w
}

// Verdict is the outcome of one aspect that may not have been checked.
type Verdict string

// The verdicts.
const (
	Passed     Verdict = "Passed"
	Failed     Verdict = "Failed"
	NotChecked Verdict = "NotChecked"
)

// OperatorHealth is the response of GET /api/v1/operators/{name}/health: the design's shape
// (operator-manager-spec.md, "Health Check Endpoint"), key for key and type for type.
type OperatorHealth struct {
	OperatorName  string          `json:"operatorName"`
	OverallHealth Health          `json:"overallHealth" description:"the worst cluster's health: Healthy, Degraded or Unhealthy; Unknown before the first check"`
	Clusters      []ClusterHealth `json:"clusters"`
}

// ClusterOperatorHealth is the response of GET /api/v1/clusters/{cluster}/operators/{name}/health:
// the design's cluster entry with the operator's name beside it.
type ClusterOperatorHealth struct {
	OperatorName string `json:"operatorName"`
	ClusterHealth
}

// WebhookState is the design's webhookStatus: one word for the webhooks part.
type WebhookState string

// The webhook states, from the webhooks part (WebhooksStatus.State).
const (
	// WebhookAvailable: the release has webhooks and every one answered and verified.
	WebhookAvailable WebhookState = "Available"
	// WebhookUnavailable: at least one webhook failed its call or its certificate check.
	WebhookUnavailable WebhookState = "Unavailable"
	// WebhookNotConfigured: the check ran and the release has no webhook.
	WebhookNotConfigured WebhookState = "NotConfigured"
	// WebhookUnknown: the webhooks could not all be looked for (or the cluster not reached).
	WebhookUnknown WebhookState = "Unknown"
)

// ReconciliationState is the design's crdReconciliation: one word for the reconciliation part.
type ReconciliationState string

// The reconciliation states, from the reconciliation part (CRDStatus.State).
const (
	// ReconciliationActive: the operator reconciles every custom resource (Ready, Pending within
	// the grace period, or Ready=False for its tenant's reasons).
	ReconciliationActive ReconciliationState = "Active"
	// ReconciliationFailing: at least one custom resource fails newly (Ready in the baseline,
	// Ready=False now): the operator's failure. The tenants' failures leave the state Active.
	ReconciliationFailing ReconciliationState = "Failing"
	// ReconciliationStale: none failing, at least one not reconciled within the freshness window.
	ReconciliationStale ReconciliationState = "Stale"
	// ReconciliationNoResources: the check ran and found no custom resources (or the operator has
	// no CRDs).
	ReconciliationNoResources ReconciliationState = "NoResources"
	// ReconciliationUnknown: a CRD or its resources could not be read (or the cluster not reached).
	ReconciliationUnknown ReconciliationState = "Unknown"
)

// ClusterHealth is one operator's health on one cluster: one Checker.Check. The first six
// fields are the design's cluster entry; Pods, Webhooks and CRDs are each part's details.
type ClusterHealth struct {
	ClusterName string `json:"clusterName"`
	Health      Health `json:"health" description:"Healthy, Degraded or Unhealthy: the worst of the three parts"`
	// ControllerPods is the number of controller pods Running and Ready (Pods.Ready).
	ControllerPods    int                 `json:"controllerPods" description:"controller pods Running and Ready (pods.total counts them all)"`
	WebhookStatus     WebhookState        `json:"webhookStatus" enum:"Available,Unavailable,NotConfigured,Unknown"`
	CRDReconciliation ReconciliationState `json:"crdReconciliation" enum:"Active,Failing,Stale,NoResources,Unknown"`
	LastChecked       time.Time           `json:"lastChecked"`

	Pods     PodsStatus     `json:"pods" description:"the controller pods part, in detail"`
	Webhooks WebhooksStatus `json:"webhooks" description:"the webhooks part, in detail"`
	CRDs     CRDStatus      `json:"crds" description:"the CRD reconciliation part, in detail"`
	Metrics  MetricsStatus  `json:"metrics" description:"the operator's own reconcile metrics, in detail"`

	// Observed is what the check saw, for the next baseline (nil when a CRD could not be
	// listed); not part of the response.
	Observed *Baseline `json:"-"`
}

// summarize sets the design's one-value fields from the parts' details.
func (h *ClusterHealth) summarize() {
	h.ControllerPods = h.Pods.Ready
	h.WebhookStatus = h.Webhooks.State()
	h.CRDReconciliation = h.CRDs.State()
}

// PodsStatus is the controller pods' part. Messages name each problem found, or say
// "not checked: why".
type PodsStatus struct {
	Health Health `json:"health"`
	// Total pods of the release (not terminating, not Succeeded); Ready of them Running and Ready.
	Total int `json:"total"`
	Ready int `json:"ready"`
	// CrashLooping pods have a container waiting in CrashLoopBackOff.
	CrashLooping int `json:"crashLooping"`
	// MaxRecentRestarts is the most restarts of one container within the restart window (those
	// the checker could attribute to it: see the package docs).
	MaxRecentRestarts int `json:"maxRecentRestarts"`
	// Resources is whether usage was compared with limits: NotChecked when metrics.k8s.io is not
	// served (that alone does not degrade the part). OverLimit counts the containers over a limit.
	Resources Verdict  `json:"resources"`
	OverLimit int      `json:"overLimit"`
	Messages  []string `json:"messages"`
}

// WebhooksStatus is the webhooks' part: Total webhooks found, Healthy of them passing both the
// call and the certificate check (a certificate NotChecked does not fail a webhook).
type WebhooksStatus struct {
	Health   Health          `json:"health"`
	Total    int             `json:"total"`
	Healthy  int             `json:"healthy"`
	Webhooks []WebhookResult `json:"webhooks"`
	Messages []string        `json:"messages"`
}

// WebhookResult is one webhook's check.
type WebhookResult struct {
	// Name is "<configuration>/<webhook>" for admission webhooks, the CRD's name for conversion.
	Name string `json:"name"`
	// Kind is Validating, Mutating or Conversion.
	Kind string `json:"kind"`
	// Endpoint is the URL, or "service <namespace>/<name>:<port><path>".
	Endpoint string `json:"endpoint"`
	// Answer: Passed when it answered 200 with a review response within the timeout.
	Answer     Verdict `json:"answer"`
	StatusCode int     `json:"statusCode,omitempty"`
	LatencyMs  int64   `json:"latencyMs"`
	// Certificate: Passed when the serving certificate is valid now and verifies against the
	// caBundle; NotChecked for webhooks reached through the service proxy.
	Certificate        Verdict    `json:"certificate"`
	CertificateExpires *time.Time `json:"certificateExpires,omitempty"`
	Message            string     `json:"message,omitempty"`
}

// CRDStatus is the reconciliation part, over the custom resources of every CRD of the target,
// judged on what the operator does (see Checker.judge): a resource counts against the operator
// when the operator is not reconciling it (Stale) or when it was Ready in the baseline and is not
// now (OperatorFailures.NewlyFailing); a resource Ready=False while reconciled is its tenant's
// (TenantFailures) and never counts against the operator.
type CRDStatus struct {
	Health    Health `json:"health"`
	CRDs      int    `json:"crds"`
	Resources int    `json:"resources"`
	// Ready: Ready=True, or reconciled without a Ready condition.
	Ready int `json:"ready"`
	// Failing: Ready=False, whoever's failure it is (the tenants' and the newly failing).
	Failing int `json:"failing"`
	// Stale: not reconciled by the operator (OperatorFailures.NotReconciling).
	Stale int `json:"stale"`
	// Pending: being reconciled within the grace period (no status yet, observedGeneration
	// behind, Ready=Unknown).
	Pending int `json:"pending"`
	// ErrorRate is the operator's failures (not reconciling + newly failing) / Resources (0 when
	// there are none): 5 % or more is Unhealthy.
	ErrorRate float64  `json:"errorRate"`
	Messages  []string `json:"messages"`

	// Baseline is the baseline compared with; null when there was none (then no resource counts
	// as newly failing).
	Baseline         *BaselineSummary `json:"baseline"`
	OperatorFailures OperatorFailures `json:"operatorFailures"`
	TenantFailures   TenantFailures   `json:"tenantFailures"`
	// Examples are a few resources of each kind of failure per CRD, with their reasons.
	Examples []ResourceExample `json:"examples"`

	notes []string // messages about the tenants' failures, after the operator's
}

// OperatorFailures count the resources that count against the operator.
type OperatorFailures struct {
	// NotReconciling: observedGeneration behind past the grace period, Reconciling that never
	// ends, no status after the grace period.
	NotReconciling int `json:"notReconciling"`
	// NewlyFailing: Ready in the baseline at the same generation, Ready=False now.
	NewlyFailing int `json:"newlyFailing"`
}

// TenantFailures count the resources Ready=False while the operator reconciles them.
type TenantFailures struct {
	// FailingBefore: failing in the baseline already.
	FailingBefore int `json:"failingBefore"`
	// FailingReconciled: created or changed by its user since the baseline (or no baseline).
	FailingReconciled int `json:"failingReconciled"`
}

// Who a failing resource blames (ResourceExample.Blame).
const (
	BlameOperator = "operator"
	BlameTenant   = "tenant"
)

// ResourceExample is one failing resource of the detail.
type ResourceExample struct {
	CRD   string `json:"crd"`
	Name  string `json:"name"`
	Blame string `json:"blame" enum:"operator,tenant"`
	// Why is notReconciling, newlyFailing, failingBefore or failingReconciled.
	Why string `json:"why" enum:"notReconciling,newlyFailing,failingBefore,failingReconciled"`
	// Reason is its Ready condition's reason now, BaselineReason the one it had in the baseline
	// ("Ready" when it was Ready).
	Reason         string `json:"reason,omitempty"`
	BaselineReason string `json:"baselineReason,omitempty"`
	// Detail says how the operator is not reconciling it.
	Detail string `json:"detail,omitempty"`
}

// State is the part in one word: Unavailable when a webhook failed, Unknown when the webhooks
// could not all be looked for, NotConfigured when there are none, Available otherwise.
func (s WebhooksStatus) State() WebhookState {
	switch {
	case s.Health == Unhealthy:
		return WebhookUnavailable
	case s.Health != Healthy:
		return WebhookUnknown
	case s.Total == 0:
		return WebhookNotConfigured
	}
	return WebhookAvailable
}

// State is the part in one word: Failing when a resource fails newly under the operator
// (Ready in the baseline, Ready=False now: the operator's failure; the tenants' failures leave it
// Active), Stale when the operator does not reconcile one, Unknown when a CRD or its resources
// could not be read, NoResources when there are none, Active otherwise.
func (s CRDStatus) State() ReconciliationState {
	switch {
	case s.OperatorFailures.NewlyFailing > 0:
		return ReconciliationFailing
	case s.Stale > 0:
		return ReconciliationStale
	case s.Health != Healthy:
		return ReconciliationUnknown
	case s.Resources == 0:
		return ReconciliationNoResources
	}
	return ReconciliationActive
}

// Overall is the OperatorHealth of operator over the given cluster results (sorted as given).
func Overall(operator string, clusters []ClusterHealth) OperatorHealth {
	oh := OperatorHealth{OperatorName: operator, OverallHealth: Unhealthy, Clusters: clusters}
	if oh.Clusters == nil {
		oh.Clusters = []ClusterHealth{}
	}
	if len(clusters) > 0 {
		hs := make([]Health, len(clusters))
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
func DecodeResult(raw []byte) (ClusterHealth, error) {
	var probe struct {
		ControllerPods json.RawMessage `json:"controllerPods"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return ClusterHealth{}, err
	}
	var h ClusterHealth
	if len(probe.ControllerPods) == 0 || probe.ControllerPods[0] != '{' {
		err := json.Unmarshal(raw, &h)
		return h, err
	}
	var old struct {
		ClusterName string         `json:"clusterName"`
		Health      Health         `json:"health"`
		LastChecked time.Time      `json:"lastChecked"`
		Pods        PodsStatus     `json:"controllerPods"`
		Webhooks    WebhooksStatus `json:"webhookStatus"`
		CRDs        CRDStatus      `json:"crdReconciliation"`
	}
	if err := json.Unmarshal(raw, &old); err != nil {
		return ClusterHealth{}, err
	}
	h = ClusterHealth{ClusterName: old.ClusterName, Health: old.Health, LastChecked: old.LastChecked,
		Pods: old.Pods, Webhooks: old.Webhooks, CRDs: old.CRDs}
	h.summarize()
	return h, nil
}
