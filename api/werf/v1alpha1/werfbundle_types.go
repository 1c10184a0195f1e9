package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WerfBundleSpec is the desired state of a WerfBundle: which OCI repository to watch and how to
// deploy each new version of the bundle.
type WerfBundleSpec struct {
	// Registry is where the bundle's versions are published.
	// +required
	Registry RegistrySpec `json:"registry"`

	// Converge describes how a version is deployed.
	// +required
	Converge ConvergeSpec `json:"converge"`

	// Suspend stops polling, deploying and drift correction until it is set back to false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RegistrySpec points at the OCI repository of the bundle.
type RegistrySpec struct {
	// URL is the OCI repository of the bundle, without a tag, e.g. ghcr.io/org/bundle.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('://')",message="url is a repository reference such as ghcr.io/org/bundle, without a scheme"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.matches(':[^/]*$')",message="url must not carry a tag or digest; tags are discovered"
	URL string `json:"url"`

	// SecretRef names a Secret in the WerfBundle's namespace with registry credentials: a
	// kubernetes.io/dockerconfigjson Secret, or keys username and password, or a key token.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the WerfBundle's namespace whose ca.crt key holds the CA
	// bundle that signs the registry's certificate. TLS is always verified.
	// +optional
	CertSecretRef *corev1.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Insecure allows plain HTTP to the registry. Only for private registries on trusted networks.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// PollInterval is how often the registry is asked for new tags.
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="pollInterval must be at least 10s"
	// +optional
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// VersionConstraint is a semver range (Masterminds syntax, e.g. ">=1.0.0 <2.0.0" or "~1.2").
	// Only tags that satisfy it are deployed; prereleases only when the range names one.
	// Empty means the highest stable version.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^\s*((\|\||,)?\s*((!=|>=|<=|=>|=<|>|<|=|~>|~|\^)?\s*v?(\d+|[xX*])(\.(\d+|[xX*])){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?(\s+-\s+v?\d+(\.(\d+|[xX*])){0,2}(-[0-9A-Za-z.-]+)?)?)\s*)*$`
	// +optional
	VersionConstraint string `json:"versionConstraint,omitempty"`
}

// ConvergeSpec describes how a version of the bundle is deployed.
type ConvergeSpec struct {
	// TargetNamespace is where the release is installed and the converge Job runs.
	// Defaults to the WerfBundle's namespace. Another namespace must accept bundles from this
	// one (annotation werf.io/accept-bundles-from on it) unless the operator allows every
	// cross-namespace deploy.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// ServiceAccountName is the pre-created ServiceAccount in the target namespace the converge
	// Job runs as. It holds the deploy permissions; the operator never does.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName"`

	// ReleaseName is the werf release name. Defaults to the WerfBundle's name.
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// ResourceLimits of the converge Job's container.
	// +kubebuilder:default={cpu: "1", memory: "1Gi"}
	// +optional
	ResourceLimits ResourceLimits `json:"resourceLimits,omitempty"`

	// LogRetentionDays is how long the log of each finished Job is kept.
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=365
	// +optional
	LogRetentionDays int32 `json:"logRetentionDays,omitempty"`

	// DriftDetection periodically compares the live release with the bundle and re-applies it.
	// +optional
	DriftDetection DriftDetection `json:"driftDetection,omitempty"`

	// ValuesFrom lists ConfigMaps and Secrets whose values are merged, in order, into the release
	// values. Later entries win.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// RollbackOnFailure re-deploys the last good tag when a deploy fails.
	// +optional
	RollbackOnFailure bool `json:"rollbackOnFailure,omitempty"`

	// JobTTLSecondsAfterFinished is how long finished Jobs stay before they are deleted; their
	// logs are kept in the log store for logRetentionDays regardless.
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=0
	// +optional
	JobTTLSecondsAfterFinished *int32 `json:"jobTTLSecondsAfterFinished,omitempty"`
}

// ResourceLimits caps the converge Job's container.
type ResourceLimits struct {
	// CPU limit.
	// +kubebuilder:default="1"
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory limit.
	// +kubebuilder:default="1Gi"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// DriftDetection configures the periodic drift check.
type DriftDetection struct {
	// Enabled turns drift detection on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Interval between drift checks.
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="driftDetection.interval must be at least 1m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// MaxRetries is how many corrections in a row are attempted before giving up.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxRetries int32 `json:"maxRetries,omitempty"`
}

// ValuesReference is one source of values: exactly one of configMapRef or secretRef.
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) != has(self.secretRef)",message="set exactly one of configMapRef or secretRef"
type ValuesReference struct {
	// ConfigMapRef reads values from a ConfigMap.
	// +optional
	ConfigMapRef *ValuesSource `json:"configMapRef,omitempty"`
	// SecretRef reads values from a Secret; they reach the Job through a mounted file only.
	// +optional
	SecretRef *ValuesSource `json:"secretRef,omitempty"`
}

// ValuesSource names a ConfigMap or Secret holding values.
type ValuesSource struct {
	// Name of the object, looked up in the WerfBundle's namespace, then in the target namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key holding a YAML document of values. When empty, a values.yaml key is used if present;
	// otherwise every key becomes a top-level value.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`

	// Optional lets the deploy go ahead when the object or key is missing.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// Phase is the coarse state of a WerfBundle.
// +kubebuilder:validation:Enum=Syncing;Synced;Failed
type Phase string

// Phases.
const (
	PhaseSyncing Phase = "Syncing"
	PhaseSynced  Phase = "Synced"
	PhaseFailed  Phase = "Failed"
)

// WerfBundleStatus is the observed state of a WerfBundle.
type WerfBundleStatus struct {
	// ObservedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Syncing while a version is being deployed, Synced when the latest version is
	// deployed, Failed when it cannot be.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// LastAppliedTag is the tag deployed last with success.
	// +optional
	LastAppliedTag string `json:"lastAppliedTag,omitempty"`

	// LastSyncTime is when LastAppliedTag was deployed.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// LastErrorMessage says what went wrong last; empty after a success.
	// +optional
	LastErrorMessage string `json:"lastErrorMessage,omitempty"`

	// ConsecutiveFailures counts failures in a row (registry or deploy); reset on success.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`

	// LastAppliedRevision identifies what was deployed last with success: a hash of the tag, the
	// merged values and the converge settings. A change to any of them makes a new revision.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastFailedRevision is the revision whose deploy failed last. It is not retried until the tag,
	// the values or the spec change, or a reconcile is requested with the werf.io/reconcile-now
	// annotation.
	// +optional
	LastFailedRevision string `json:"lastFailedRevision,omitempty"`

	// ActiveJob is the converge or drift-check Job running now, in the target namespace.
	// +optional
	ActiveJob string `json:"activeJob,omitempty"`

	// LastFinishedJob is the last Job whose outcome is recorded here.
	// +optional
	LastFinishedJob string `json:"lastFinishedJob,omitempty"`

	// LastJobLog names the ConfigMap in the operator's namespace that holds the log of the last
	// finished Job (kept for logRetentionDays).
	// +optional
	LastJobLog string `json:"lastJobLog,omitempty"`

	// Registry is what the last successful poll saw.
	// +optional
	Registry *RegistryStatus `json:"registry,omitempty"`

	// Drift is the state of drift detection.
	// +optional
	Drift *DriftStatus `json:"drift,omitempty"`

	// LastHandledReconcileNow is the last value of the werf.io/reconcile-now annotation acted on.
	// +optional
	LastHandledReconcileNow string `json:"lastHandledReconcileNow,omitempty"`

	// LastHandledPush is the last value of the werf.io/push-received annotation acted on (a poll
	// made due), so a new leader does not poll again for a push already handled.
	// +optional
	LastHandledPush string `json:"lastHandledPush,omitempty"`

	// Repository is spec.registry.url in the canonical form registries name a repository in
	// their push notifications (host in lower case, Docker Hub's short names spelled out, as
	// docker.io/library/nginx). It is a selectable field: the push webhook finds every bundle of a
	// pushed repository with one field-selected list from the API server, whichever shard holds
	// it (kubectl get werfbundles -A --field-selector status.repository=ghcr.io/org/bundle).
	// +optional
	Repository string `json:"repository,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, DriftDetected.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RegistryStatus records the last successful poll of the registry.
type RegistryStatus struct {
	// URL and VersionConstraint the poll was made for; the ETag is only reused while they match.
	URL               string `json:"url,omitempty"`
	VersionConstraint string `json:"versionConstraint,omitempty"`
	// ETag the registry returned for the tag list, sent back as If-None-Match.
	// +optional
	ETag string `json:"etag,omitempty"`
	// TagsDigest is a digest of the tag list, so a registry that answers every poll in full (no
	// ETag) is still seen to have changed or not.
	// +optional
	TagsDigest string `json:"tagsDigest,omitempty"`
	// LatestTag is the highest tag matching the constraint.
	// +optional
	LatestTag string `json:"latestTag,omitempty"`
}

// DriftStatus records drift detection.
type DriftStatus struct {
	// LastCheckTime is when the last drift check finished.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// Corrections counts re-applies in a row made to correct drift; reset when a check finds none.
	// +optional
	Corrections int32 `json:"corrections,omitempty"`
	// Summary of the last drift found.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// Annotations understood on a WerfBundle.
const (
	// ReconcileNowAnnotation requests an immediate poll and retries a failed revision when its
	// value changes (e.g. kubectl annotate werfbundle x werf.io/reconcile-now="$(date +%s)" --overwrite).
	ReconcileNowAnnotation = "werf.io/reconcile-now"

	// PushReceivedAnnotation is written by the push receiver, on whichever operator replica a
	// registry notification reaches, with the time it arrived: a new value makes the next poll due
	// at once. Unlike ReconcileNowAnnotation it never retries a failed revision, so a forged push
	// can cost a poll but not a redeploy.
	PushReceivedAnnotation = "werf.io/push-received"
)

// AcceptBundlesFromAnnotation, on a Namespace, lets WerfBundles of other namespaces deploy into
// it: a comma-separated list of the namespaces it accepts bundles from, or "*" for any. Without
// it a bundle deploys only into its own namespace (unless the operator runs with
// --werfbundle-allow-cross-namespace).
const AcceptBundlesFromAnnotation = "werf.io/accept-bundles-from"

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wb,categories=slipway
// +kubebuilder:selectablefield:JSONPath=`.status.repository`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Tag",type=string,JSONPath=`.status.lastAppliedTag`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`

// WerfBundle deploys each new version of a werf bundle published to an OCI registry.
type WerfBundle struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WerfBundleSpec `json:"spec"`
	// +optional
	Status WerfBundleStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WerfBundleList is a list of WerfBundles.
type WerfBundleList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WerfBundle `json:"items"`
}

func init() {
	register(&WerfBundle{}, &WerfBundleList{})
}
