package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebAppSpec is the desired state of a WebApp: one container image served by a Deployment and
// exposed by a Service.
type WebAppSpec struct {
	// Image is the container image, with a tag or a digest (an implicit "latest" is refused).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// Replicas is the number of pods.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Port is the container port and the Service port.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// Env is passed to the container.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources are the container's requests and limits.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// ServiceType is the type of the Service.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// HealthCheckPath, when set, is probed over HTTP on Port for readiness and liveness.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	HealthCheckPath string `json:"healthCheckPath,omitempty"`

	// ImagePullSecrets name Secrets in the WebApp's namespace used to pull the image.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// PodSecurity is the Pod Security Standard the pods are made to meet. "baseline" (the
	// default) suits most images, including those that start as root (nginx); "restricted" also
	// makes the pods run as a non-root user and drop every capability, as a namespace that
	// enforces restricted requires: the image must then run as a numeric non-root user (USER
	// 65532, not USER nginx).
	// +optional
	// +kubebuilder:default=baseline
	// +kubebuilder:validation:Enum=baseline;restricted
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`
}

// PodSecurityLevel is a Pod Security Standard a WebApp's pods meet.
type PodSecurityLevel string

// The Pod Security Standards a WebApp's pods can be made to meet.
const (
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// Phase is a WebApp's lifecycle summary.
// +kubebuilder:validation:Enum=Reconciling;WaitingForPods;Ready;Scaling;Deleting;Failed
type Phase string

// Phases of a WebApp.
const (
	// PhaseReconciling: the Deployment and Service are being created or updated.
	PhaseReconciling Phase = "Reconciling"
	// PhaseWaitingForPods: the Deployment exists and its pods are not yet available.
	PhaseWaitingForPods Phase = "WaitingForPods"
	// PhaseReady: every desired replica is updated and available.
	PhaseReady Phase = "Ready"
	// PhaseScaling: the replica count changed and the Deployment is converging to it.
	PhaseScaling Phase = "Scaling"
	// PhaseDeleting: the WebApp is being deleted.
	PhaseDeleting Phase = "Deleting"
	// PhaseFailed: the rollout cannot progress (deadline exceeded, or the objects cannot be written).
	PhaseFailed Phase = "Failed"
)

// Condition types a WebApp reports besides Ready.
const (
	// ConditionAvailable mirrors the Deployment's Available condition.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while a rollout or scale is under way.
	ConditionProgressing = "Progressing"
)

// WebAppStatus is the observed state of a WebApp.
type WebAppStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase summarises the state.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// Replicas is the number of pods the Deployment has (any version).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// UpdatedReplicas is the number of pods running the current spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// AvailableReplicas is the number of available pods.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// Selector is the label selector of the pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// URL is the in-cluster address of the Service.
	// +optional
	URL string `json:"url,omitempty"`
	// Conditions: Ready, Available, Progressing, and Stalled while a human is needed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebApp runs a container image as a Deployment behind a Service.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=wa,categories=slipway
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebAppSpec   `json:"spec"`
	Status WebAppStatus `json:"status,omitempty"`
}

// WebAppList is a list of WebApps.
// +kubebuilder:object:root=true
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

func init() {
	register(&WebApp{}, &WebAppList{})
}
