// Package v1alpha1 contains the catalyst.catalyst.dev/v1alpha1 API: preview environments.
//
// A Project (in a team namespace, e.g. my-team) says where an application's source lives, how it is
// built and deployed, and the defaults of its environments. An Environment (in the project
// namespace, e.g. my-team-my-project) asks for one deployment of the project at one commit, in a
// namespace of its own named <team>-<project>-<environment> (see
// internal/controller/catalyst/naming), reachable at https://<environment>.<preview domain>.
//
// Condition types and reasons are documented constants in condition_types.go.
// +kubebuilder:object:generate=true
// +groupName=catalyst.catalyst.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "catalyst.catalyst.dev", Version: "v1alpha1"}

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
