package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// SecretReference names a Secret in the namespace of the object that holds the reference.
type SecretReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// Quota caps the total compute of one environment namespace. The controller writes it into the
// namespace's ResourceQuota as requests and limits.
type Quota struct {
	// CPU is the total CPU the environment's pods may use, e.g. "1" or "500m".
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory is the total memory the environment's pods may use, e.g. "2Gi".
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}
