// Package scheme builds the runtime.Scheme shared by the operator, the dev environment and tests:
// the built-in Kubernetes types, CRD types and every slipway API group.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	werfv1alpha1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

// New returns a scheme with every type slipway reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(werfv1alpha1.AddToScheme(s))
	utilruntime.Must(webappv1.AddToScheme(s))
	utilruntime.Must(catalystv1alpha1.AddToScheme(s))
	return s
}
