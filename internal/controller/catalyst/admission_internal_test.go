package catalyst

import (
	"maps"
	"testing"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// TestPolicyParams: the admission parameters carry the Project's lists, with the documented
// defaults where it sets none: the preview's ingress class, the cluster's default storage class,
// nothing else.
func TestPolicyParams(t *testing.T) {
	none := map[string]string{PolicyHost: "pr-1.example.dev", PolicySubHosts: "false", PolicyIngressClasses: "", PolicyIngressAnnotations: "",
		PolicyGateways: "", PolicyServiceTypes: "", PolicyPriorityClasses: "", PolicyStorageClasses: "", PolicyClusterRoles: ""}
	with := func(edit func(map[string]string)) map[string]string {
		m := maps.Clone(none)
		edit(m)
		return m
	}
	for _, tc := range []struct {
		name           string
		project        func(*catalystv1alpha1.Project)
		defaultStorage string
		want           map[string]string
	}{
		{name: "defaults, no class, no default storage class", want: none},
		{name: "the preview's class and the cluster's default storage class", defaultStorage: "standard",
			project: func(p *catalystv1alpha1.Project) { p.Spec.Preview.IngressClassName = "nginx" },
			want:    with(func(m map[string]string) { m[PolicyIngressClasses], m[PolicyStorageClasses] = "nginx", "standard" })},
		{name: "the Project's lists replace the defaults", defaultStorage: "standard", project: func(p *catalystv1alpha1.Project) {
			p.Spec.Preview.IngressClassName = "nginx"
			d := &p.Spec.Deployment
			d.AllowSubHosts = true
			d.AllowedIngressClasses = []string{"internal", "public"}
			d.AllowedIngressAnnotations = []catalystv1alpha1.IngressAnnotations{{IngressClassName: "public", Keys: []string{"a.io/x", "b.io/*"}}, {Keys: []string{"c.io/y"}}}
			d.AllowedGateways = []catalystv1alpha1.GatewayReference{{Namespace: "infra", Name: "web"}}
			d.AllowedServiceTypes = []string{"NodePort"}
			d.AllowedPriorityClasses = []string{"low"}
			d.AllowedStorageClasses = []string{"fast", "slow"}
			d.AllowedClusterRoles = []string{"view"}
		}, want: map[string]string{PolicyHost: "pr-1.example.dev", PolicySubHosts: "true", PolicyIngressClasses: "internal,public",
			PolicyIngressAnnotations: "public=a.io/x,public=b.io/*,=c.io/y", PolicyGateways: "infra/web", PolicyServiceTypes: "NodePort",
			PolicyPriorityClasses: "low", PolicyStorageClasses: "fast,slow", PolicyClusterRoles: "view"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &catalystv1alpha1.Project{}
			if tc.project != nil {
				tc.project(p)
			}
			if got := policyParams(p, "pr-1.example.dev", tc.defaultStorage); !maps.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}
