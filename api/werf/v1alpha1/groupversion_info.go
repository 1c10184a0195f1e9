// Package v1alpha1 contains the werf.io/v1alpha1 API: the WerfBundle pull deployer.
// +kubebuilder:object:generate=true
// +groupName=werf.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "werf.io", Version: "v1alpha1"}

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
