// Package v1 contains the webapp.slipway.dev/v1 API: the WebApp operator.
// +kubebuilder:object:generate=true
// +groupName=webapp.slipway.dev
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "webapp.slipway.dev", Version: "v1"}

	// SchemeBuilder registers the types of this API.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
