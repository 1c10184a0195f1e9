package deploy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// object is an object of apiVersion and kind named name, with more fields.
func object(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		obj.Object[k] = v
	}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetName(name)
	return obj
}

func roleBinding(roleKind, roleName string) *unstructured.Unstructured {
	return object("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", map[string]any{
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": roleKind, "name": roleName},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default"}},
	})
}

// alwaysDeniedObjects are objects of every kind the built-in denials name (each group that
// alwaysDenied denies whole, through its kinds as Kubernetes serves them).
var alwaysDeniedObjects = []*unstructured.Unstructured{
	object("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "w", nil),
	object("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "w", nil),
	object("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "p", nil),
	object("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "p", nil),
	object("admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicy", "p", nil),
	object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.dev", nil),
	object("apiregistration.k8s.io/v1", "APIService", "v1.example.dev", nil),
	object("certificates.k8s.io/v1", "CertificateSigningRequest", "csr", nil),
	object("certificates.k8s.io/v1beta1", "ClusterTrustBundle", "b", nil),
	object("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "f", nil),
	object("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "l", nil),
	object("scheduling.k8s.io/v1", "PriorityClass", "first", nil),
	object("rbac.authorization.k8s.io/v1", "ClusterRole", "r", nil),
	object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "rb", nil),
	object("v1", "Namespace", "other", nil),
}

// TestPolicy_Refusal: the built-in denials refuse their kinds whatever the Project allows; a
// RoleBinding to a ClusterRole needs the Project's allowedClusterRoles; allowedKinds, when set,
// are the only kinds let through, deniedKinds are refused, and a kind both lists name is
// refused (deniedKinds win).
func TestPolicy_Refusal(t *testing.T) {
	const (
		never      = "is of a kind an environment may never hold"
		denied     = "is of a kind the Project's deniedKinds refuse"
		notAllowed = "is of a kind not in the Project's allowedKinds"
	)
	gk := func(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
	configMap := object("v1", "ConfigMap", "c", nil)
	deployment := object("apps/v1", "Deployment", "d", nil)
	type tc struct {
		name   string
		policy Policy
		obj    *unstructured.Unstructured
		want   string // "" when allowed
	}
	cases := []tc{
		{"a ConfigMap, no policy", Policy{}, configMap, ""},
		{"a Role of the namespace, no policy", Policy{}, object("rbac.authorization.k8s.io/v1", "Role", "r", nil), ""},
		{"a RoleBinding to a Role", Policy{}, roleBinding("Role", "reader"), ""},
		{"a RoleBinding to a ClusterRole, none allowed", Policy{}, roleBinding("ClusterRole", "edit"),
			"binds ClusterRole edit, which is not in the Project's allowedClusterRoles"},
		{"a RoleBinding to a ClusterRole not allowed", Policy{AllowedClusterRoles: []string{"view"}}, roleBinding("ClusterRole", "cluster-admin"),
			"binds ClusterRole cluster-admin, which is not in the Project's allowedClusterRoles"},
		{"a RoleBinding to an allowed ClusterRole", Policy{AllowedClusterRoles: []string{"view", "edit"}}, roleBinding("ClusterRole", "edit"), ""},
		{"a RoleBinding to an allowed ClusterRole, RBAC allowed by group", Policy{AllowedKinds: []schema.GroupKind{gk("rbac.authorization.k8s.io", "*")},
			AllowedClusterRoles: []string{"view"}}, roleBinding("ClusterRole", "view"), ""},
		{"a RoleBinding to a ClusterRole, RBAC allowed by group but not that role", Policy{AllowedKinds: []schema.GroupKind{gk("rbac.authorization.k8s.io", "*")}},
			roleBinding("ClusterRole", "admin"), "binds ClusterRole admin"},
		{"allowedKinds: a kind listed", Policy{AllowedKinds: []schema.GroupKind{gk("", "ConfigMap"), gk("apps", "Deployment")}}, deployment, ""},
		{"allowedKinds: a kind not listed", Policy{AllowedKinds: []schema.GroupKind{gk("", "ConfigMap")}}, deployment, notAllowed},
		{"allowedKinds: the same kind name in another group", Policy{AllowedKinds: []schema.GroupKind{gk("", "Deployment")}}, deployment, notAllowed},
		{"allowedKinds: a whole group", Policy{AllowedKinds: []schema.GroupKind{gk("apps", "*")}}, deployment, ""},
		{"allowedKinds: a whole group, a kind of another", Policy{AllowedKinds: []schema.GroupKind{gk("apps", "*")}}, configMap, notAllowed},
		{"allowedKinds: the core group whole", Policy{AllowedKinds: []schema.GroupKind{gk("", "*")}}, configMap, ""},
		{"allowedKinds: a RoleBinding listed still needs its ClusterRole allowed", Policy{AllowedKinds: []schema.GroupKind{gk("rbac.authorization.k8s.io", "RoleBinding")}},
			roleBinding("ClusterRole", "edit"), "binds ClusterRole edit"},
		{"deniedKinds: a kind listed", Policy{DeniedKinds: []schema.GroupKind{gk("apps", "Deployment")}}, deployment, denied},
		{"deniedKinds: a whole group", Policy{DeniedKinds: []schema.GroupKind{gk("apps", "*")}}, deployment, denied},
		{"deniedKinds: a kind not listed", Policy{DeniedKinds: []schema.GroupKind{gk("apps", "*")}}, configMap, ""},
		{"both name the kind: deniedKinds win", Policy{AllowedKinds: []schema.GroupKind{gk("apps", "Deployment")},
			DeniedKinds: []schema.GroupKind{gk("apps", "Deployment")}}, deployment, denied},
		{"both name the group: deniedKinds win", Policy{AllowedKinds: []schema.GroupKind{gk("apps", "*")},
			DeniedKinds: []schema.GroupKind{gk("apps", "*")}}, deployment, denied},
		{"allowed by group, denied by kind", Policy{AllowedKinds: []schema.GroupKind{gk("apps", "*")},
			DeniedKinds: []schema.GroupKind{gk("apps", "Deployment")}}, deployment, denied},
		{"allowed by kind, denied by group", Policy{AllowedKinds: []schema.GroupKind{gk("apps", "Deployment")},
			DeniedKinds: []schema.GroupKind{gk("apps", "*")}}, deployment, denied},
	}
	// Every built-in denial holds with no policy, and against a Project that lists the kind (or
	// its whole group) in allowedKinds.
	for _, obj := range alwaysDeniedObjects {
		g := obj.GroupVersionKind().Group
		cases = append(cases,
			tc{obj.GetKind() + ", no policy", Policy{}, obj, never},
			tc{obj.GetKind() + ", allowed by the Project", Policy{AllowedKinds: []schema.GroupKind{gk(g, obj.GetKind()), gk(g, "*")},
				AllowedClusterRoles: []string{"r"}}, obj, never})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.policy.refusal(c.obj)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("refusal = %q, want %q", got, c.want)
			}
		})
	}
	// A kind added to alwaysDenied gets an object above.
	for _, d := range alwaysDenied {
		if !matchAny(d, alwaysDeniedObjects) {
			t.Errorf("no object of the always denied %v in alwaysDeniedObjects", d)
		}
	}
}

func matchAny(d schema.GroupKind, objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if matchKind([]schema.GroupKind{d}, o.GroupVersionKind().GroupKind()) {
			return true
		}
	}
	return false
}

// TestCheck_PolicyAfterScopeAndGuardRails: the whole check before the first write names every
// refused object with why, in this order: a cluster-scoped kind is refused as such (even when the
// Project allows it), an object of another namespace as such, a guard rail as such even when
// allowedKinds names it, then the Project's policy; an object of the environment's own namespace
// passes.
func TestCheck_PolicyAfterScopeAndGuardRails(t *testing.T) {
	scopes := func(gvk schema.GroupVersionKind) (bool, error) {
		switch gvk.Kind {
		case "ClusterRole", "Namespace", "ValidatingWebhookConfiguration", "PriorityClass", "StorageClass":
			return false, nil
		}
		return true, nil
	}
	doc := `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.dev/fast
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: sees-everything}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: mine, namespace: env-1}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: more}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
`
	ms, err := parseManifests("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Namespace: "env-1", Policy: Policy{
		AllowedKinds: []schema.GroupKind{{Group: "storage.k8s.io", Kind: "*"}, {Kind: "ConfigMap"}, {Kind: "ResourceQuota"}},
		DeniedKinds:  []schema.GroupKind{{Group: "apps", Kind: "*"}},
	}}
	err = check(ms, req, scopes, prepareOptions{})
	want := []string{
		"5 objects refused, nothing was applied to namespace env-1",
		"StorageClass.storage.k8s.io/fast (test.yaml, document 1) is cluster-scoped; an environment holds only objects of its namespace env-1",
		"ValidatingWebhookConfiguration.admissionregistration.k8s.io/sees-everything (test.yaml, document 2) is cluster-scoped",
		"ConfigMap/coredns (test.yaml, document 3) is for namespace kube-system",
		"ResourceQuota/more (test.yaml, document 5) is a guard rail",
		"Deployment.apps/app (test.yaml, document 6) is of a kind the Project's deniedKinds refuse",
	}
	if err == nil {
		t.Fatal("check passed, want refusals")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "ConfigMap/mine") {
		t.Errorf("%q refuses the ConfigMap of the environment's namespace", err)
	}
}
