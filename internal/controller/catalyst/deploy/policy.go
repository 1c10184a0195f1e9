package deploy

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Policy says which kinds a deploy may hold, on top of the refusals every deploy gets (see
// refusal). It comes from the Project (spec.deployment).
type Policy struct {
	// AllowedKinds, when not empty, are the only kinds allowed. Kind "*" allows a whole group.
	AllowedKinds []schema.GroupKind
	// DeniedKinds are refused. Kind "*" denies a whole group.
	DeniedKinds []schema.GroupKind
	// AllowedClusterRoles are the ClusterRoles a RoleBinding may refer to; a RoleBinding to any
	// other ClusterRole is refused.
	AllowedClusterRoles []string
}

// alwaysDenied are refused whatever the Policy says. Most are cluster-scoped and refused as such
// too; they are named so the refusal says what they are, and so a namespaced kind of these
// groups (an aggregated API, a CRD) is refused as well.
var alwaysDenied = []schema.GroupKind{
	{Group: "admissionregistration.k8s.io", Kind: "*"},
	{Group: "apiextensions.k8s.io", Kind: "*"},
	{Group: "apiregistration.k8s.io", Kind: "*"},
	{Group: "certificates.k8s.io", Kind: "*"},
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "*"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	{Kind: "Namespace"},
}

func matchKind(list []schema.GroupKind, gk schema.GroupKind) bool {
	return slices.ContainsFunc(list, func(p schema.GroupKind) bool {
		return p.Group == gk.Group && (p.Kind == "*" || p.Kind == gk.Kind)
	})
}

// policyRefusal says why the Policy (or the built-in denials) refuses obj, "" when it does not.
func (p Policy) refusal(obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	switch {
	case matchKind(alwaysDenied, gk):
		return "is of a kind an environment may never hold"
	case matchKind(p.DeniedKinds, gk):
		return "is of a kind the Project's deniedKinds refuse"
	case len(p.AllowedKinds) > 0 && !matchKind(p.AllowedKinds, gk):
		return "is of a kind not in the Project's allowedKinds"
	case gk == schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:
		kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
		if kind == "ClusterRole" && !slices.Contains(p.AllowedClusterRoles, name) {
			return fmt.Sprintf("binds ClusterRole %s, which is not in the Project's allowedClusterRoles", name)
		}
	}
	return ""
}

// maxRefusalsNamed bounds how many refused objects an error names; the rest are counted.
const maxRefusalsNamed = 20

// refusedError lists every refused object of a render (each "Kind/name (origin) why").
func refusedError(namespace string, refused []string) error {
	n := len(refused)
	shown := refused[:min(n, maxRefusalsNamed)]
	msg := strings.Join(shown, "; ")
	if n > len(shown) {
		msg += fmt.Sprintf("; and %d more", n-len(shown))
	}
	what := "1 object"
	if n > 1 {
		what = fmt.Sprintf("%d objects", n)
	}
	return fmt.Errorf("%w: %s refused, nothing was applied to namespace %s: %s", ErrRefusedObject, what, namespace, msg)
}
