package deploy_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// A Role, a ServiceAccount and a RoleBinding between them, as many public charts bring: the dry
// run cannot store the Role before it judges the binding, whose check of the rules it grants then
// finds no Role.
const roleAndBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: reader}]
`

// TestAdmission_RoleBindingToARoleOfTheSameDeploy deploys a Role and a RoleBinding to it in one
// deploy, as a chart, manifests and a kustomization: the dry run does not take the Role it has not
// stored yet for a refusal (nor for a transient failure retried for ever), and both are written.
func TestAdmission_RoleBindingToARoleOfTheSameDeploy(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(gittest.HelmChart("charts/app", "app"), gittest.Manifests("deploy"), gittest.Manifests("kustomize"),
		gittest.Files{
			"charts/app/templates/rbac.yaml": []byte(roleAndBinding),
			"deploy/rbac.yaml":               []byte(roleAndBinding),
			"kustomize/rbac.yaml":            []byte(roleAndBinding),
			"kustomize/kustomization.yaml":   []byte("resources: [deployment.yaml, service.yaml, rbac.yaml]\n"),
		}))
	for _, tc := range []struct {
		typ  catalystv1alpha1.DeploymentType
		path string
	}{{helmType, "charts/app"}, {manifestType, "deploy"}, {kustomizeType, "kustomize"}} {
		t.Run(string(tc.typ), func(t *testing.T) {
			f.deploy(f.request(tc.typ, src, tc.path))
			var rb rbacv1.RoleBinding
			f.get("reader", &rb)
			if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "reader" {
				t.Errorf("RoleBinding reader refers to %+v", rb.RoleRef)
			}
			f.get("reader", &rbacv1.Role{})
		})
	}
}
