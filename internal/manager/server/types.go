package server

import (
	"encoding/json"
	"time"
)

// The API's JSON types. Field names are part of the contract: scripts rely on them.

// HealthResponse is GET /health.
type HealthResponse struct {
	Status   string `json:"status" description:"ok or degraded"`
	Database string `json:"database" description:"ok, or why the database does not answer"`
	Engine   string `json:"engine" description:"postgres or sqlite"`
}

// ChartRef names a Helm chart in a chart repository (https://, http://) or an OCI registry (oci://).
type ChartRef struct {
	Repository string `json:"repository"`
	Name       string `json:"name"`
}

// OperatorRequest registers an operator.
type OperatorRequest struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Chart     ChartRef `json:"chart"`
	// Versions narrows the discovered versions with a semver constraint (">=1.2, <2").
	Versions string `json:"versions,omitempty"`
}

// Operator is a registered operator.
type Operator struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Namespace     string    `json:"namespace"`
	Chart         ChartRef  `json:"chart"`
	Versions      []string  `json:"versions"`
	VersionFilter string    `json:"versionFilter,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
}

// OperatorList is a page of operators.
type OperatorList struct {
	Items    []Operator `json:"items"`
	Continue string     `json:"continue,omitempty"`
}

// ClusterRequest registers a cluster. Kubeconfig is the kubeconfig's YAML text; its credentials
// must be inline (no files, no exec plugins).
type ClusterRequest struct {
	Name        string `json:"name"`
	Environment string `json:"environment"`
	Kubeconfig  string `json:"kubeconfig"`
}

// Cluster is a registered cluster; it never carries any part of its kubeconfig.
type Cluster struct {
	Name              string     `json:"name"`
	Environment       string     `json:"environment"`
	KubernetesVersion string     `json:"kubernetesVersion"`
	Health            string     `json:"health"`
	HealthReason      string     `json:"healthReason,omitempty"`
	LastChecked       *time.Time `json:"lastChecked,omitempty"`
	CreatedAt         time.Time  `json:"createdAt"`
}

// ClusterList is a page of clusters.
type ClusterList struct {
	Items    []Cluster `json:"items"`
	Continue string    `json:"continue,omitempty"`
}

// ClusterHealth is a cluster's last health check.
type ClusterHealth struct {
	Name              string     `json:"name"`
	Health            string     `json:"health"`
	Reason            string     `json:"reason,omitempty"`
	KubernetesVersion string     `json:"kubernetesVersion"`
	LastChecked       *time.Time `json:"lastChecked,omitempty"`
}

// CRDRequest records a revision of a CRD's definition: the CustomResourceDefinition as a JSON
// object, or as YAML text in a JSON string.
type CRDRequest struct {
	Definition json.RawMessage `json:"definition"`
	// Version labels the revision (a release of whatever ships the CRD).
	Version string `json:"version"`
}

// CRDRevision is one stored definition of a CRD.
type CRDRevision struct {
	Version   string    `json:"version"`
	Operator  string    `json:"operator,omitempty"`
	Digest    string    `json:"digest"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// CRD is a CRD with its schema history (oldest first) and approvals.
type CRD struct {
	Name      string        `json:"name"`
	Group     string        `json:"group"`
	Kind      string        `json:"kind"`
	Scope     string        `json:"scope"`
	Revisions []CRDRevision `json:"revisions"`
	Approvals []Approval    `json:"approvals"`
}

// CRDSummary is a CRD in a list.
type CRDSummary struct {
	Name      string      `json:"name"`
	Group     string      `json:"group"`
	Kind      string      `json:"kind"`
	Revisions int         `json:"revisions"`
	Latest    CRDRevision `json:"latest"`
}

// CRDList is a page of CRDs.
type CRDList struct {
	Items    []CRDSummary `json:"items"`
	Continue string       `json:"continue,omitempty"`
}

// ValidateRequest names a candidate definition, either given (definition) or shipped by a
// registered operator's chart version (operator + version), and the clusters whose existing
// objects to check (default: every registered cluster). The baseline is the latest stored
// revision, or the revision of baseVersion.
type ValidateRequest struct {
	Definition  json.RawMessage `json:"definition,omitempty"`
	Operator    string          `json:"operator,omitempty"`
	Version     string          `json:"version,omitempty"`
	BaseVersion string          `json:"baseVersion,omitempty"`
	Clusters    []string        `json:"clusters,omitempty"`
}

// SchemaChange is one difference between two definitions.
type SchemaChange struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	Version  string `json:"version,omitempty"`
	Breaking bool   `json:"breaking"`
	Message  string `json:"message"`
}

// InvalidObject is an existing custom resource that the candidate schema would refuse.
type InvalidObject struct {
	Namespace string   `json:"namespace,omitempty"`
	Name      string   `json:"name"`
	Version   string   `json:"version"`
	Errors    []string `json:"errors"`
}

// ClusterCheck is the existing-object check in one cluster.
type ClusterCheck struct {
	Cluster        string          `json:"cluster"`
	Environment    string          `json:"environment"`
	Installed      bool            `json:"installed"`
	Objects        int             `json:"objects"`
	InvalidObjects []InvalidObject `json:"invalidObjects"`
	Error          string          `json:"error,omitempty"`
}

// ValidationReport is POST /crds/{name}/validate.
type ValidationReport struct {
	CRD              string         `json:"crd"`
	From             *CRDRevision   `json:"from,omitempty"`
	To               CRDRevision    `json:"to"`
	Breaking         bool           `json:"breaking"`
	Changes          []SchemaChange `json:"changes"`
	Clusters         []ClusterCheck `json:"clusters"`
	ApprovalRequired bool           `json:"approvalRequired"`
	Approved         bool           `json:"approved"`
}

// ApproveRequest approves a breaking change: with operator, exactly the change that validate
// reports for the same operator, version and baseVersion; without, the change to the stored
// revision labelled version (or with digest) from the revision before it (or baseVersion's).
type ApproveRequest struct {
	Operator    string `json:"operator,omitempty"`
	Version     string `json:"version,omitempty"`
	Digest      string `json:"digest,omitempty"`
	BaseVersion string `json:"baseVersion,omitempty"`
	Reason      string `json:"reason"`
}

// Approval is a recorded approval.
type Approval struct {
	CRD        string    `json:"crd"`
	FromDigest string    `json:"fromDigest"`
	ToDigest   string    `json:"toDigest"`
	ToVersion  string    `json:"toVersion"`
	ApprovedBy string    `json:"approvedBy"`
	Reason     string    `json:"reason"`
	RequestID  string    `json:"requestId"`
	CreatedAt  time.Time `json:"createdAt"`
}

// AuditEvent is one audit record.
type AuditEvent struct {
	ID         int64          `json:"id"`
	Time       time.Time      `json:"time"`
	Actor      string         `json:"actor"`
	Action     string         `json:"action"`
	TargetKind string         `json:"targetKind"`
	TargetName string         `json:"targetName"`
	Result     string         `json:"result"`
	RequestID  string         `json:"requestId"`
	Details    map[string]any `json:"details,omitempty"`
}

// AuditList is a page of the audit log.
type AuditList struct {
	Items    []AuditEvent `json:"items"`
	Continue string       `json:"continue,omitempty"`
}
