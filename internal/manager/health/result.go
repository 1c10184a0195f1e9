package health

import "time"

// Health is the health of a part, a cluster or an operator.
//
// The rule: a part is Unhealthy when it found a fault that hurts users (no Ready controller pod,
// a pod in CrashLoopBackOff or restarted 3 times in 5 minutes, a webhook that does not answer 200
// within 1 s or whose certificate is expired or does not verify, 5 % or more of the custom
// resources Ready=False or stale); Degraded when it found a lesser fault (some pods not Ready,
// a container over its limits, a few failing or stale resources) or could not run at all (the
// API failed: "not checked"); Healthy when it ran and found nothing. A cluster is its worst part;
// an operator is its worst cluster (Unhealthy when it has none).
type Health string

// The health values.
const (
	Healthy   Health = "Healthy"
	Degraded  Health = "Degraded"
	Unhealthy Health = "Unhealthy"
)

func rank(h Health) int {
	switch h {
	case Healthy:
		return 0
	case Degraded:
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

// OperatorHealth is the response of GET /api/v1/operators/{name}/health and (with one cluster)
// GET /api/v1/clusters/{cluster}/operators/{name}/health.
type OperatorHealth struct {
	OperatorName  string          `json:"operatorName"`
	OverallHealth Health          `json:"overallHealth"`
	Clusters      []ClusterHealth `json:"clusters"`
}

// ClusterHealth is one operator's health on one cluster: one Checker.Check.
type ClusterHealth struct {
	ClusterName       string        `json:"clusterName"`
	Health            Health        `json:"health"`
	ControllerPods    PodsStatus    `json:"controllerPods"`
	WebhookStatus     WebhookStatus `json:"webhookStatus"`
	CRDReconciliation CRDStatus     `json:"crdReconciliation"`
	LastChecked       time.Time     `json:"lastChecked"`
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

// WebhookStatus is the webhooks' part: Total webhooks found, Healthy of them passing both the
// call and the certificate check (a certificate NotChecked does not fail a webhook).
type WebhookStatus struct {
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

// CRDStatus is the reconciliation part, over the custom resources of every CRD of the target.
// A resource is Ready (condition True and fresh), Failing (Ready=False), Stale (no Ready
// condition, or one neither current in observedGeneration nor changed within FreshFor) or
// Pending (created within FreshFor, not yet reconciled, or Ready=Unknown and fresh).
type CRDStatus struct {
	Health    Health `json:"health"`
	CRDs      int    `json:"crds"`
	Resources int    `json:"resources"`
	Ready     int    `json:"ready"`
	Failing   int    `json:"failing"`
	Stale     int    `json:"stale"`
	Pending   int    `json:"pending"`
	// ErrorRate is Failing / Resources (0 when there are none).
	ErrorRate float64  `json:"errorRate"`
	Messages  []string `json:"messages"`
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
