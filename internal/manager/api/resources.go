package api

import (
	"encoding/json"
	"time"
)

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
	// Credentials authenticate to a private chart source. In answers only the user name and
	// that they are set are shown, never a password or token.
	Credentials *ChartCredentials `json:"credentials,omitempty"`
}

// ChartCredentials are a private chart source's credentials: username and password (HTTP Basic
// for a Helm repository, registry basic auth for OCI), or token (a Bearer token for a Helm
// repository, a registry token for OCI) with an optional username.
type ChartCredentials struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty" description:"write-only: never returned"`
	Token    string `json:"token,omitempty" description:"write-only: never returned"`
	// Set is true in answers when the operator has credentials.
	Set bool `json:"set,omitempty" description:"read-only: true when credentials are stored"`
}

// OperatorRequest registers an operator.
type OperatorRequest struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Chart     ChartRef `json:"chart"`
	// Versions narrows the discovered versions with a semver constraint (">=1.2, <2").
	Versions string `json:"versions,omitempty"`
	// MigrationNotes are migration notes for revisions of CRDs the chart's versions ship.
	MigrationNotes []MigrationNoteRequest `json:"migrationNotes,omitempty"`
	// DefaultValues are Helm values merged under each deployment's values when it installs.
	DefaultValues json.RawMessage `json:"defaultValues,omitempty" description:"a JSON object of Helm values (at most 256 KiB) merged under each deployment's values"`
}

// MigrationNoteRequest is a migration note for the revision of a CRD that one of an operator's
// versions ships: how to move existing objects to it, as markdown text, a link, or both.
type MigrationNoteRequest struct {
	CRD     string `json:"crd" description:"the CRD's name, <plural>.<group>"`
	Version string `json:"version,omitempty" description:"the operator version whose revision of the CRD the note is for (default: the newest version that ships the CRD)"`
	Text    string `json:"text,omitempty" description:"markdown, at most 10000 characters"`
	URL     string `json:"url,omitempty" description:"an https:// or http:// link to a migration guide"`
}

// MigrationNote is a CRD revision's migration note.
type MigrationNote struct {
	Text string `json:"text,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Operator is a registered operator.
type Operator struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Chart     ChartRef `json:"chart"`
	// Versions are the versions that can be deployed, newest first.
	Versions      []string  `json:"versions"`
	VersionFilter string    `json:"versionFilter,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	// The operator lifecycle (issue 19): versions no longer offered, when the operator last
	// changed or was deleted, and (one operator's GET) its last refresh.
	RemovedVersions []RemovedVersion       `json:"removedVersions,omitempty"`
	UpdatedAt       time.Time              `json:"updatedAt"`
	DeletedAt       *time.Time             `json:"deletedAt,omitempty"`
	Refresh         *OperatorRefreshStatus `json:"refresh,omitempty"`
	// DefaultValues are merged under each deployment's values (one operator's answers).
	DefaultValues json.RawMessage `json:"defaultValues,omitempty"`
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
	// MigrationNote tells how to move existing objects to this revision.
	MigrationNote *MigrationNote `json:"migrationNote,omitempty"`
}

// CRDRevision is one stored definition of a CRD.
type CRDRevision struct {
	Version   string    `json:"version" description:"the operator version that first shipped it, or the label it was posted with"`
	Operator  string    `json:"operator,omitempty"`
	Digest    string    `json:"digest" description:"sha256 of the definition; \"dropped\" in a validation report's to when the version no longer ships the CRD"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	// Versions are the operator's versions that ship this revision, newest first (A → B → A:
	// the older revision lists the newest version again).
	Versions []string `json:"versions,omitempty"`
	// Dropped: the operator version does not ship the CRD any more (a validation report's to).
	Dropped       bool           `json:"dropped,omitempty"`
	MigrationNote *MigrationNote `json:"migrationNote,omitempty"`
}

// CRD is a CRD with its schema history (oldest first) and approvals.
type CRD struct {
	Name      string        `json:"name"`
	Group     string        `json:"group"`
	Kind      string        `json:"kind"`
	Scope     string        `json:"scope"`
	Revisions []CRDRevision `json:"revisions"`
	Approvals []Approval    `json:"approvals"`
	// DroppedIn are the operator versions that no longer ship the CRD while an older one did.
	DroppedIn []OperatorVersionRef `json:"droppedIn,omitempty"`
	// Clusters are the CRD's status in every registered cluster, read now (GET only).
	Clusters []CRDClusterStatus `json:"clusters,omitempty"`
}

// OperatorVersionRef names one version of an operator.
type OperatorVersionRef struct {
	Operator string `json:"operator"`
	Version  string `json:"version"`
}

// CRDClusterStatus is a CRD as one registered cluster has it, and whether that is what the
// manager last deployed there.
type CRDClusterStatus struct {
	Cluster     string `json:"cluster"`
	Environment string `json:"environment"`
	Installed   bool   `json:"installed"`
	// ServedVersions, StorageVersion and StoredVersions (status.storedVersions) as the cluster has them.
	ServedVersions []string `json:"servedVersions,omitempty"`
	StorageVersion string   `json:"storageVersion,omitempty"`
	StoredVersions []string `json:"storedVersions,omitempty"`
	// Revision is the stored revision the cluster's definition is (by its spec with the API
	// server's defaults); absent when it is none of them.
	Revision *CRDRevision `json:"revision,omitempty"`
	// Deployed is what the manager last deployed there: the operator version running there and
	// the revision it ships (digest "dropped" when it ships none).
	Deployed *DeployedCRD `json:"deployed,omitempty"`
	// MatchesDeployed: the cluster runs the revision the deployed version ships (false when
	// nothing was deployed there, or the definition was changed or removed since).
	MatchesDeployed bool   `json:"matchesDeployed"`
	Error           string `json:"error,omitempty" description:"why the cluster could not be read; the other fields are then empty"`
}

// DeployedCRD is the operator version the manager last deployed to a cluster and the revision of
// a CRD that version ships.
type DeployedCRD struct {
	Operator     string `json:"operator"`
	Version      string `json:"version"`
	DeploymentID string `json:"deploymentId"`
	Digest       string `json:"digest"`
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
	// MigrationNotes are the notes of the revisions on the way from from to to (an operator's
	// versions between them, oldest first), or of to.
	MigrationNotes []RevisionNote `json:"migrationNotes,omitempty"`
}

// RevisionNote is the migration note of one CRD revision, with what ships it.
type RevisionNote struct {
	CRD     string        `json:"crd"`
	Version string        `json:"version" description:"the operator version that ships the revision (or its label)"`
	Digest  string        `json:"digest"`
	Note    MigrationNote `json:"note"`
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
