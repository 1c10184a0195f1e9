package api

import "time"

// Operator health (GET /api/v1/operators/{name}/health and /clusters/{cluster}/operators/{name}/health):
// the health checker's results. Package health builds these types and the rollout engine stores
// them as they are (store.OperatorHealth.Result is an OperatorHealthCheck as JSON), so the answer
// is the check itself, with no copy of its types to convert from.

// OperatorHealth is the response of GET /api/v1/operators/{name}/health: the design's shape
// (operator-manager-spec.md, "Health Check Endpoint"), key for key and type for type.
type OperatorHealth struct {
	OperatorName  string                `json:"operatorName"`
	OverallHealth HealthState           `json:"overallHealth" description:"the worst cluster's health: Healthy, Degraded or Unhealthy; Unknown before the first check"`
	Clusters      []OperatorHealthCheck `json:"clusters"`
}

// ClusterOperatorHealth is the response of GET /api/v1/clusters/{cluster}/operators/{name}/health:
// the design's cluster entry with the operator's name beside it.
type ClusterOperatorHealth struct {
	OperatorName string `json:"operatorName"`
	OperatorHealthCheck
}

// OperatorHealthCheck is one operator's health on one cluster: one Checker.Check. The first six
// fields are the design's cluster entry; Pods, Webhooks and CRDs are each part's details.
type OperatorHealthCheck struct {
	ClusterName string      `json:"clusterName"`
	Health      HealthState `json:"health" description:"Healthy, Degraded or Unhealthy: the worst of the three parts"`
	// ControllerPods is the number of controller pods Running and Ready (Pods.Ready).
	ControllerPods    int                 `json:"controllerPods" description:"controller pods Running and Ready (pods.total counts them all)"`
	WebhookStatus     WebhookState        `json:"webhookStatus" enum:"Available,Unavailable,NotConfigured,Unknown"`
	CRDReconciliation ReconciliationState `json:"crdReconciliation" enum:"Active,Failing,Stale,NoResources,Unknown"`
	LastChecked       time.Time           `json:"lastChecked"`

	Pods     PodsStatus           `json:"pods" description:"the controller pods part, in detail"`
	Webhooks WebhooksStatus       `json:"webhooks" description:"the webhooks part, in detail"`
	CRDs     ReconciliationStatus `json:"crds" description:"the CRD reconciliation part, in detail"`
	Metrics  MetricsStatus        `json:"metrics" description:"the operator's own reconcile metrics, in detail"`
}

// HealthState is the health of a part, a cluster or an operator.
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
type HealthState string

// Verdict is the outcome of one aspect that may not have been checked.
type Verdict string

// WebhookState is the design's webhookStatus: one word for the webhooks part.
type WebhookState string

// ReconciliationState is the design's crdReconciliation: one word for the reconciliation part.
type ReconciliationState string

// PodsStatus is the controller pods' part. Messages name each problem found, or say
// "not checked: why".
type PodsStatus struct {
	Health HealthState `json:"health"`
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
	Health   HealthState     `json:"health"`
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

// ReconciliationStatus is the reconciliation part, over the custom resources of every CRD of the target,
// judged on what the operator does (see package health): a resource counts against the operator
// when the operator is not reconciling it (Stale) or when it was Ready in the baseline and is not
// now (OperatorFailures.NewlyFailing); a resource Ready=False while reconciled is its tenant's
// (TenantFailures) and never counts against the operator.
type ReconciliationStatus struct {
	Health    HealthState `json:"health"`
	CRDs      int         `json:"crds"`
	Resources int         `json:"resources"`
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
}

// BaselineSummary is the baseline a check compared with: when and from what it was captured,
// how many resources it held and how many of them were failing then.
type BaselineSummary struct {
	CapturedAt   time.Time `json:"capturedAt"`
	Source       string    `json:"source" enum:"deployment-start,last-healthy"`
	DeploymentID string    `json:"deploymentId,omitempty"`
	Resources    int       `json:"resources"`
	Failing      int       `json:"failing"`
	// Metrics is whether it holds a metrics snapshot.
	Metrics bool `json:"metrics"`
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

// MetricsStatus is the operator's own metrics part: its reconcile error rate over the window since
// the baseline, compared with the window before, its panics, its workqueues. Health is Unknown
// when the metrics were not read (Read NotChecked, Messages say why): the cluster is then judged
// on the other parts, and never passed on metrics.
type MetricsStatus struct {
	Health   HealthState `json:"health" enum:"Healthy,Degraded,Unhealthy,Unknown"`
	Read     Verdict     `json:"read"`
	Endpoint string      `json:"endpoint,omitempty"`
	// Window is since the baseline's snapshot (or the process's start); Before the window before
	// the deployment it is compared with.
	Window *RateWindow `json:"window,omitempty"`
	Before *RateWindow `json:"before,omitempty"`
	// Panics are the reconcile panics within the window.
	Panics                float64  `json:"panics"`
	WorkqueueDepth        float64  `json:"workqueueDepth"`
	LongestRunningSeconds float64  `json:"longestRunningSeconds"`
	Messages              []string `json:"messages"`
}

// RateWindow is the reconcile error rate between two moments.
type RateWindow struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Basis: baseline (since the baseline's snapshot), last-healthy (the last Healthy check's
	// snapshot before the baseline to the baseline), lifetime (since the process started).
	Basis      string  `json:"basis" enum:"baseline,last-healthy,lifetime"`
	Reconciles float64 `json:"reconciles"`
	Errors     float64 `json:"errors"`
	ErrorRate  float64 `json:"errorRate"`
	// Reset: the counters restarted within the window (a new process): counted from zero.
	Reset bool `json:"reset,omitempty"`
}

// The health values (HealthState): a cluster's is its worst part, an operator's its worst
// cluster; HealthUnknown is an operator's before its first check and the metrics part's when
// they were not read.
const (
	Healthy       HealthState = "Healthy"
	Degraded      HealthState = "Degraded"
	Unhealthy     HealthState = "Unhealthy"
	HealthUnknown HealthState = "Unknown"
)

// The verdicts of one aspect that may not have been checked (Verdict).
const (
	VerdictPassed     Verdict = "Passed"
	VerdictFailed     Verdict = "Failed"
	VerdictNotChecked Verdict = "NotChecked"
)

// The webhook states (WebhookState).
const (
	WebhookAvailable     WebhookState = "Available"
	WebhookUnavailable   WebhookState = "Unavailable"
	WebhookNotConfigured WebhookState = "NotConfigured"
	WebhookUnknown       WebhookState = "Unknown"
)

// The reconciliation states (ReconciliationState).
const (
	ReconciliationActive      ReconciliationState = "Active"
	ReconciliationFailing     ReconciliationState = "Failing"
	ReconciliationStale       ReconciliationState = "Stale"
	ReconciliationNoResources ReconciliationState = "NoResources"
	ReconciliationUnknown     ReconciliationState = "Unknown"
)

// State is the webhooks part in one word: Unavailable when a webhook failed, Unknown when the
// webhooks could not all be looked for, NotConfigured when there are none, Available otherwise.
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

// State is the reconciliation part in one word: Failing when a resource fails newly under the
// operator (Ready in the baseline, Ready=False now: the operator's failure; the tenants' failures
// leave it Active), Stale when the operator does not reconcile one, Unknown when a CRD or its
// resources could not be read, NoResources when there are none, Active otherwise.
func (s ReconciliationStatus) State() ReconciliationState {
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
