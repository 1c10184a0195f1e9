package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvironmentSpec is the desired state of an Environment: one deployment of a project at one
// commit, in a namespace of its own.
type EnvironmentSpec struct {
	// ProjectRef names the Project this environment deploys. It cannot be changed.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="projectRef is immutable"
	ProjectRef ProjectReference `json:"projectRef"`

	// Type is development (a preview of a branch or pull request; the project's default TTL
	// applies) or deployment (a long-lived environment such as staging or production, which
	// expires only when its own ttl is set). Both build the image for their commit when the
	// registry does not have it yet.
	// +kubebuilder:default=development
	// +optional
	Type EnvironmentType `json:"type,omitempty"`

	// Source is the commit to build and deploy.
	// +required
	Source EnvironmentSource `json:"source"`

	// Config is injected into the deployment.
	// +optional
	Config EnvironmentConfig `json:"config,omitempty"`

	// Resources override the project's defaults for this environment's namespace.
	// +optional
	Resources EnvironmentResources `json:"resources,omitempty"`

	// TTL is how long this environment lives after its creation or the last change to its
	// spec, whichever is later; it is then deleted. It overrides the project's defaultTTL;
	// "0s" means never.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) == duration('0s') || duration(self) >= duration('1m')",message="ttl must be 0s (never) or at least 1m"
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
}

// ProjectReference names the Project of an Environment.
type ProjectReference struct {
	// Name of the Project.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Namespace of the Project, the team namespace. Empty means the value of the Environment's
	// catalyst.dev/team label. The reference is honoured only when the Environment lives in
	// that project's namespace, <team>-<project>, so that one team cannot deploy (or read the
	// Secrets of) another team's Project.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// EnvironmentType is the kind of environment.
// +kubebuilder:validation:Enum=development;deployment
type EnvironmentType string

// Environment types.
const (
	// EnvironmentTypeDevelopment is a short-lived preview of a branch or pull request.
	EnvironmentTypeDevelopment EnvironmentType = "development"
	// EnvironmentTypeDeployment is a long-lived environment such as staging or production.
	EnvironmentTypeDeployment EnvironmentType = "deployment"
)

// EnvironmentSource is the commit of an Environment.
type EnvironmentSource struct {
	// CommitSHA is the full commit hash to build and deploy (40 hex digits, or 64 for
	// SHA-256 repositories). The image is tagged with it.
	// +required
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	CommitSHA string `json:"commitSha"`

	// Branch the commit belongs to. It is fetched to reach the commit quickly and recorded on
	// the namespace. Empty means the project's branch.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^-/\s~^:?*\[\\][^\s~^:?*\[\\]*$`
	// +kubebuilder:validation:XValidation:rule="self != '@' && !self.contains('..') && !self.contains('@{') && !self.contains('//') && !self.endsWith('/') && !self.endsWith('.') && !self.matches('(^|/)\\\\.') && !self.matches('\\\\.lock(/|$)')",message="branch must be a valid git branch name"
	// +optional
	Branch string `json:"branch,omitempty"`

	// PRNumber is the pull request the environment previews, if any.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PRNumber int64 `json:"prNumber,omitempty"`
}

// EnvironmentConfig is injected into the deployment.
type EnvironmentConfig struct {
	// EnvVars are set on every container and init container of every workload the deployment
	// renders, whatever its type (Helm: by a post-renderer, whatever the chart's values look
	// like). A variable the deployment sets itself is kept unless one of the same name is here.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	EnvVars []EnvVar `json:"envVars,omitempty"`
}

// EnvVar is one environment variable. Values are stored in the Environment in plain text: put
// secrets in a Secret named by the Project's secretRefs instead.
type EnvVar struct {
	// Name of the variable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	Name string `json:"name"`

	// Value of the variable.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Value string `json:"value,omitempty"`
}

// EnvironmentResources override the project's defaults for one environment.
type EnvironmentResources struct {
	// Quota replaces the project's defaultQuota for this environment.
	// +optional
	Quota *Quota `json:"quota,omitempty"`
}

// Phase summarises an Environment's state for the web application that polls it.
// +kubebuilder:validation:Enum=Pending;Building;Deploying;Failed;Ready
type Phase string

// Phases of an Environment.
const (
	// PhasePending: accepted; the namespace and its policies are being prepared, or a
	// prerequisite (the Project, a Secret) is missing.
	PhasePending Phase = "Pending"
	// PhaseBuilding: the image for the commit is being built.
	PhaseBuilding Phase = "Building"
	// PhaseDeploying: the commit is being deployed and the deployment is not yet available.
	PhaseDeploying Phase = "Deploying"
	// PhaseFailed: the build or the deployment failed; the Ready condition says why. A new
	// commit or a spec change retries.
	PhaseFailed Phase = "Failed"
	// PhaseReady: the commit is deployed and available at status.url.
	PhaseReady Phase = "Ready"
)

// JobReference names a Job.
type JobReference struct {
	// Namespace of the Job.
	Namespace string `json:"namespace"`
	// Name of the Job.
	Name string `json:"name"`
}

// EnvironmentStatus is the observed state of an Environment.
type EnvironmentStatus struct {
	// ObservedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarises the state: Pending, Building, Deploying, Failed or Ready.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// URL is where the environment is served, set once the deployment is available.
	// +optional
	URL string `json:"url,omitempty"`

	// Namespace is the environment's namespace, <team>-<project>-<environment> (shortened with
	// a hash when longer than 63 characters).
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Image is the image deployed, or being built, for ObservedCommit: <repository>:<commitSha>.
	// +optional
	Image string `json:"image,omitempty"`

	// ObservedCommit is the commit the rest of the status describes.
	// +optional
	ObservedCommit string `json:"observedCommit,omitempty"`

	// BuildJob is the Job that builds (or built) Image, when one was needed.
	// +optional
	BuildJob *JobReference `json:"buildJob,omitempty"`

	// DeployedRevision identifies what was deployed last with success: the commit, the image
	// and a hash of the project's deployment settings and this environment's config. A change
	// to any of them causes a redeploy.
	// +optional
	DeployedRevision string `json:"deployedRevision,omitempty"`

	// EnvVarContainers is how many containers (init containers included) of the last deploy
	// received spec.config.envVars.
	// +optional
	EnvVarContainers int32 `json:"envVarContainers,omitempty"`

	// ExpiresAt is when the environment will be deleted because of its TTL.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// Conditions: NamespaceReady, BuildReady, DeploymentReady and Ready; Reconciling and
	// Stalled while true.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EnvironmentFinalizer holds an Environment until its namespace is gone.
const EnvironmentFinalizer = "catalyst.catalyst.dev/environment"

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cenv,categories=slipway;catalyst
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Project",type=string,priority=1,JSONPath=`.spec.projectRef.name`
// +kubebuilder:printcolumn:name="Type",type=string,priority=1,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Commit",type=string,priority=1,JSONPath=`.spec.source.commitSha`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 63",message="an Environment's name must be a DNS label (lowercase letters, digits and '-', at most 63 characters): it is the first label of its host name"

// Environment is one deployment of a Project at one commit: a namespace with a quota and a
// network policy, an image built when missing, the deployment and an Ingress. It lives in the
// project's namespace.
type Environment struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EnvironmentSpec `json:"spec"`
	// +optional
	Status EnvironmentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EnvironmentList is a list of Environments.
type EnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Environment `json:"items"`
}

func init() {
	register(&Environment{}, &EnvironmentList{})
}
