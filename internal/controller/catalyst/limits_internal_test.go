package catalyst

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

func q(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

// TestDesiredLimitRange_DerivesDefaultsFromTheQuota: a namespace with a quota gets container
// defaults (a quarter of the quota as limits, a tenth as requests) so pods without limits are
// admitted; the Project's containerDefaults override them; defaults that cannot fit are refused.
func TestDesiredLimitRange_DerivesDefaultsFromTheQuota(t *testing.T) {
	type want struct{ reqCPU, limCPU, reqMem, limMem string }
	for _, tc := range []struct {
		name     string
		quota    *catalystv1alpha1.Quota
		envQuota *catalystv1alpha1.Quota
		defaults *catalystv1alpha1.ContainerDefaults
		want     *want
		wantErr  string
	}{
		{name: "no quota, no defaults: no LimitRange"},
		{name: "derived from the project's quota", quota: &catalystv1alpha1.Quota{CPU: q("1"), Memory: q("2Gi")},
			want: &want{reqCPU: "100m", limCPU: "250m", reqMem: "204Mi", limMem: "512Mi"}},
		{name: "the environment's quota wins", quota: &catalystv1alpha1.Quota{CPU: q("1")}, envQuota: &catalystv1alpha1.Quota{CPU: q("4")},
			want: &want{reqCPU: "400m", limCPU: "1"}},
		{name: "a memory-only quota defaults memory only", quota: &catalystv1alpha1.Quota{Memory: q("1Gi")},
			want: &want{reqMem: "102Mi", limMem: "256Mi"}},
		{name: "explicit values win, the others are derived", quota: &catalystv1alpha1.Quota{CPU: q("2"), Memory: q("4Gi")},
			defaults: &catalystv1alpha1.ContainerDefaults{Limits: &catalystv1alpha1.ComputeResources{CPU: q("1")},
				Requests: &catalystv1alpha1.ComputeResources{Memory: q("64Mi")}},
			want: &want{reqCPU: "200m", limCPU: "1", reqMem: "64Mi", limMem: "1Gi"}},
		{name: "a derived request follows a smaller explicit limit", quota: &catalystv1alpha1.Quota{CPU: q("10")},
			defaults: &catalystv1alpha1.ContainerDefaults{Limits: &catalystv1alpha1.ComputeResources{CPU: q("100m")}},
			want:     &want{reqCPU: "100m", limCPU: "100m"}},
		{name: "explicit defaults without a quota", defaults: &catalystv1alpha1.ContainerDefaults{
			Requests: &catalystv1alpha1.ComputeResources{CPU: q("50m")}, Limits: &catalystv1alpha1.ComputeResources{CPU: q("500m")}},
			want: &want{reqCPU: "50m", limCPU: "500m"}},
		{name: "a limit alone gives the request too (as the API server would)", defaults: &catalystv1alpha1.ContainerDefaults{
			Limits: &catalystv1alpha1.ComputeResources{Memory: q("256Mi")}},
			want: &want{reqMem: "256Mi", limMem: "256Mi"}},
		{name: "a request above its limit", defaults: &catalystv1alpha1.ContainerDefaults{
			Requests: &catalystv1alpha1.ComputeResources{Memory: q("1Gi")}, Limits: &catalystv1alpha1.ComputeResources{Memory: q("512Mi")}},
			wantErr: "the default memory request 1Gi is above the default limit 512Mi"},
		{name: "a limit above the quota", quota: &catalystv1alpha1.Quota{CPU: q("1")},
			defaults: &catalystv1alpha1.ContainerDefaults{Limits: &catalystv1alpha1.ComputeResources{CPU: q("2")}},
			wantErr:  "the default cpu limit 2 is above the environment's quota of 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProject(func(p *catalystv1alpha1.Project) {
				p.Spec.Resources = catalystv1alpha1.ProjectResources{DefaultQuota: tc.quota, ContainerDefaults: tc.defaults}
			})
			env := &catalystv1alpha1.Environment{}
			env.Spec.Resources.Quota = tc.envQuota
			lr, err := desiredLimitRange(env, p, "ns")
			if tc.wantErr != "" {
				if !errors.Is(err, errContainerDefaults) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an errContainerDefaults with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if lr != nil {
					t.Fatalf("got a LimitRange %+v, want none", lr.Spec)
				}
				return
			}
			if lr == nil || len(lr.Spec.Limits) != 1 || lr.Spec.Limits[0].Type != corev1.LimitTypeContainer {
				t.Fatalf("got %+v, want one Container item", lr)
			}
			item := lr.Spec.Limits[0]
			check := func(what string, list corev1.ResourceList, name corev1.ResourceName, want string) {
				got, ok := list[name]
				switch {
				case want == "" && ok:
					t.Errorf("%s %s = %s, want none", what, name, got.String())
				case want != "" && (!ok || got.Cmp(resource.MustParse(want)) != 0):
					t.Errorf("%s %s = %s, want %s", what, name, got.String(), want)
				}
			}
			check("request", item.DefaultRequest, corev1.ResourceCPU, tc.want.reqCPU)
			check("limit", item.Default, corev1.ResourceCPU, tc.want.limCPU)
			check("request", item.DefaultRequest, corev1.ResourceMemory, tc.want.reqMem)
			check("limit", item.Default, corev1.ResourceMemory, tc.want.limMem)
			if lr.Name != LimitRangeName || lr.Namespace != "ns" {
				t.Errorf("LimitRange %s/%s", lr.Namespace, lr.Name)
			}
		})
	}
}

func TestBuildNamespaceRefusal_MatchesTheEngine(t *testing.T) {
	ns := func(level string) *corev1.Namespace {
		n := &corev1.Namespace{}
		n.Name = "slipway-builds"
		if level != "" {
			n.Labels = map[string]string{labelPodSecurityEnforce: level}
		}
		return n
	}
	for _, tc := range []struct {
		level   string
		engine  catalystv1alpha1.BuildEngine
		refused bool
	}{
		{"", catalystv1alpha1.BuildEngineKaniko, false},
		{"privileged", catalystv1alpha1.BuildEngineKaniko, false},
		{"baseline", catalystv1alpha1.BuildEngineKaniko, false},
		{"baseline", "", false},
		{"restricted", catalystv1alpha1.BuildEngineKaniko, true},
		{"restricted", "", true},
		{"privileged", catalystv1alpha1.BuildEngineBuildKit, false},
		{"baseline", catalystv1alpha1.BuildEngineBuildKit, true},
		{"restricted", catalystv1alpha1.BuildEngineBuildKit, true},
		{"nonsense", catalystv1alpha1.BuildEngineKaniko, true},
	} {
		msg := buildNamespaceRefusal(ns(tc.level), tc.engine)
		if (msg != "") != tc.refused {
			t.Errorf("level %q engine %q: %q, want refused=%v", tc.level, tc.engine, msg, tc.refused)
		}
		if tc.refused && (!strings.Contains(msg, "slipway-builds") || !strings.Contains(msg, labelPodSecurityEnforce+"=")) {
			t.Errorf("level %q engine %q: the message %q does not say what to do", tc.level, tc.engine, msg)
		}
	}
}
