// Package v1 contains the webapp.slipway.dev/v1 API: the WebApp operator.
// +kubebuilder:object:generate=true
// +groupName=webapp.slipway.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "webapp.slipway.dev", Version: "v1"}

	// SchemeBuilder registers the types of this API.
	SchemeBuilder runtime.SchemeBuilder

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// register adds objects to the scheme builder under GroupVersion; the API's type files call it from
// init. The API package depends on k8s.io/apimachinery only.
func register(objects ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objects...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
}
