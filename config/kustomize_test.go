package config_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestKustomize_ControllersDecideTheRBAC builds config/default (every controller's role) and an
// overlay that runs only WebApp, as docs/operator.md shows: the overlay holds the common and
// webapp roles and no other.
func TestKustomize_ControllersDecideTheRBAC(t *testing.T) {
	// config/ copied into memory, with the overlay beside config/default.
	fsys := filesys.MakeFsInMemory()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fsys.WriteFile(filepath.Join("/config", path), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	overlay := "/config/only-webapp"
	kustomization := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../crd
- ../manager
- ../webhook
components:
- ../rbac/common
- ../rbac/webapp
patches:
- target: {kind: Deployment, name: slipway-operator}
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --controllers=webapp
`
	if err := fsys.WriteFile(overlay+"/kustomization.yaml", []byte(kustomization)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{"/config/default", []string{"slipway-catalyst", "slipway-common", "slipway-metrics-reader", "slipway-webapp", "slipway-werfbundle"}},
		{overlay, []string{"slipway-common", "slipway-webapp"}},
	} {
		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, tc.dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", tc.dir, err)
		}
		var roles, bindings []string
		for _, r := range res.Resources() {
			switch r.GetKind() {
			case "ClusterRole":
				roles = append(roles, r.GetName())
			case "ClusterRoleBinding":
				bindings = append(bindings, r.GetName())
			}
		}
		slices.Sort(roles)
		if !slices.Equal(roles, tc.want) {
			t.Errorf("%s: ClusterRoles %v, want %v", tc.dir, roles, tc.want)
		}
		for _, b := range bindings {
			if !slices.Contains(roles, b) {
				t.Errorf("%s: ClusterRoleBinding %s without its role", tc.dir, b)
			}
		}
	}
}
