package config

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWebhookConfigurations_PointAtTheServiceOrALocalURL(t *testing.T) {
	m, v, err := WebhookConfigurations("")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Webhooks) == 0 || len(v.Webhooks) == 0 {
		t.Fatalf("want webhooks in both configurations, got %d mutating and %d validating", len(m.Webhooks), len(v.Webhooks))
	}
	for _, w := range m.Webhooks {
		if w.ClientConfig.Service == nil || w.ClientConfig.URL != nil {
			t.Errorf("%s: want a Service reference, got %+v", w.Name, w.ClientConfig)
		}
	}

	m, v, err = WebhookConfigurations("https://localhost:9443")
	if err != nil {
		t.Fatal(err)
	}
	for _, cc := range []struct {
		name string
		url  *string
		svc  bool
	}{{m.Webhooks[0].Name, m.Webhooks[0].ClientConfig.URL, m.Webhooks[0].ClientConfig.Service != nil},
		{v.Webhooks[0].Name, v.Webhooks[0].ClientConfig.URL, v.Webhooks[0].ClientConfig.Service != nil}} {
		if cc.url == nil || !strings.HasPrefix(*cc.url, "https://localhost:9443/") || cc.svc {
			t.Errorf("%s: want a URL under https://localhost:9443/ and no Service, got %v", cc.name, cc.url)
		}
	}
}

func TestRoles_CommonPlusTheChosenControllers(t *testing.T) {
	all, err := Controllers()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"catalyst", "webapp", "werfbundle"}; !slices.Equal(all, want) {
		t.Fatalf("controllers: want %v, got %v", want, all)
	}
	for _, tc := range []struct {
		controllers []string
		want        []string
	}{
		{[]string{"webapp"}, []string{"slipway-common", "slipway-webapp"}},
		{[]string{"werfbundle", "webapp", "werfbundle"}, []string{"slipway-common", "slipway-werfbundle", "slipway-webapp"}},
		{nil, []string{"slipway-common", "slipway-werfbundle", "slipway-webapp", "slipway-catalyst"}},
	} {
		cluster, roles, err := Roles(tc.controllers...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range cluster {
			got = append(got, r.Name)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("Roles(%v): want ClusterRoles %v, got %v", tc.controllers, want, got)
		}
		for _, r := range roles {
			if !slices.Contains(want, r.Name) || r.Namespace == "" {
				t.Errorf("Roles(%v): unexpected Role %s/%s", tc.controllers, r.Namespace, r.Name)
			}
		}
	}
	if _, _, err := Roles("deployer"); err == nil {
		t.Error("Roles(deployer): want an error, deployer is no controller")
	}
	if _, _, err := Roles("nope"); err == nil {
		t.Error("Roles(nope): want an error naming the unknown controller")
	}
}

// TestRoles_UnboundRolesAreNotControllers: the ClusterRoles a controller ships unbound
// (rbac/<controller>/<name>/role.yaml) come with that controller only, and make no controller of
// their own.
func TestRoles_UnboundRolesAreNotControllers(t *testing.T) {
	for _, tc := range []struct {
		controllers []string
		want        []string
	}{
		{nil, []string{"slipway-catalyst-deployer"}},
		{[]string{"catalyst", "catalyst"}, []string{"slipway-catalyst-deployer"}},
		{[]string{"werfbundle", "webapp"}, nil},
	} {
		roles, err := UnboundRoles(tc.controllers...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range roles {
			got = append(got, r.Name)
			if len(r.Rules) == 0 {
				t.Errorf("%s: no rules", r.Name)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("UnboundRoles(%v) = %v, want %v", tc.controllers, got, tc.want)
		}
	}
	// Roles of the bound kind never include them.
	cluster, _, err := Roles()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cluster {
		if r.Name == "slipway-catalyst-deployer" {
			t.Error("Roles() returns slipway-catalyst-deployer, which no operator is bound to")
		}
	}
	if _, err := UnboundRoles("deployer"); err == nil {
		t.Error("UnboundRoles(deployer): want an error, deployer is no controller")
	}
}

func TestNamespaces_OperatorNamespaceIsRestricted(t *testing.T) {
	nss, err := Namespaces()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(nss, func(ns *corev1.Namespace) bool { return ns.Name == "slipway-system" })
	if i < 0 {
		t.Fatalf("no slipway-system Namespace in manager/*.yaml: %v", nss)
	}
	if got := nss[i].Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("slipway-system: want pod-security enforce=restricted, got %q", got)
	}
	// Catalyst's build namespace comes with its Deployment (manager/catalyst).
	i = slices.IndexFunc(nss, func(ns *corev1.Namespace) bool { return ns.Name == "slipway-builds" })
	if i < 0 {
		t.Fatalf("no slipway-builds Namespace in manager/*/*.yaml: %v", nss)
	}
	if got := nss[i].Labels["pod-security.kubernetes.io/enforce"]; got != "baseline" {
		t.Errorf("slipway-builds: want pod-security enforce=baseline, got %q", got)
	}
	// So is the namespace of its deployers, where nothing runs.
	i = slices.IndexFunc(nss, func(ns *corev1.Namespace) bool { return ns.Name == "slipway-catalyst-deployers" })
	if i < 0 {
		t.Fatalf("no slipway-catalyst-deployers Namespace in manager/*/*.yaml: %v", nss)
	}
	if got := nss[i].Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("slipway-catalyst-deployers: want pod-security enforce=restricted, got %q", got)
	}
}
