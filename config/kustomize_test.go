package config_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestKustomize_ControllersDecideTheRBAC builds config/default (every system) and an overlay
// that runs only WebApp, as docs/operator.md shows: each holds the roles, ServiceAccounts and
// Deployments of its systems and no other, and each system's ServiceAccount is bound to the
// common roles and its own, nothing else. The ClusterRoles a controller ships unbound
// (slipway-catalyst-deployer) are bound to nobody.
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
resources: [../crd, ../webhook]
components: [../rbac/common, ../rbac/webapp, ../manager/common, ../manager/webapp]
`
	if err := fsys.WriteFile(overlay+"/kustomization.yaml", []byte(kustomization)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir     string
		systems []string
		roles   []string
	}{
		{"/config/default", []string{"catalyst", "webapp", "werfbundle"},
			[]string{"slipway-catalyst", "slipway-catalyst-deployer", "slipway-common", "slipway-metrics-reader", "slipway-webapp", "slipway-werfbundle"}},
		{overlay, []string{"webapp"}, []string{"slipway-common", "slipway-webapp"}},
	} {
		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, tc.dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", tc.dir, err)
		}
		var roles, accounts, deployments []string
		// held: the roles bound to each ServiceAccount.
		held := map[string][]string{}
		for _, r := range res.Resources() {
			switch r.GetKind() {
			case "ClusterRole":
				roles = append(roles, r.GetName())
			case "ServiceAccount":
				accounts = append(accounts, r.GetName())
			case "Deployment":
				deployments = append(deployments, r.GetName())
			case "ClusterRoleBinding", "RoleBinding":
				m, err := r.Map()
				if err != nil {
					t.Fatal(err)
				}
				b := &rbacv1.RoleBinding{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, b); err != nil {
					t.Fatal(err)
				}
				for _, s := range b.Subjects {
					if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != "slipway-system" {
						t.Errorf("%s: %s %s binds %+v, want the systems' ServiceAccounts", tc.dir, r.GetKind(), r.GetName(), s)
					}
					held[s.Name] = append(held[s.Name], b.RoleRef.Name)
				}
			}
		}
		var want []string
		for _, s := range tc.systems {
			want = append(want, "slipway-"+s)
		}
		slices.Sort(roles)
		slices.Sort(accounts)
		slices.Sort(deployments)
		if !slices.Equal(roles, tc.roles) {
			t.Errorf("%s: ClusterRoles %v, want %v", tc.dir, roles, tc.roles)
		}
		if !slices.Equal(accounts, want) || !slices.Equal(deployments, want) {
			t.Errorf("%s: ServiceAccounts %v and Deployments %v, want %v", tc.dir, accounts, deployments, want)
		}
		for _, sa := range want {
			got := slices.Compact(slices.Sorted(slices.Values(held[sa])))
			if exp := slices.Sorted(slices.Values([]string{"slipway-common", sa})); !slices.Equal(got, exp) {
				t.Errorf("%s: %s holds %v, want %v", tc.dir, sa, got, exp)
			}
			delete(held, sa)
		}
		if len(held) > 0 {
			t.Errorf("%s: bindings to ServiceAccounts the install does not create: %v", tc.dir, held)
		}
	}
}
