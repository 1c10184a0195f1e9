package approvals

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

func dev(name, installed string) Target {
	return Target{Cluster: name, Environment: store.EnvironmentDev, Installed: installed}
}

func prod(name, installed string) Target {
	return Target{Cluster: name, Environment: store.EnvironmentProduction, Installed: installed}
}

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Policy
		facts  Facts
		want   []Requirement
	}{
		{
			name:  "first install to Dev needs nothing",
			facts: Facts{Operator: "widgets", Version: "1.0.0", Targets: []Target{dev("d1", "")}},
		},
		{
			name:  "re-deploy of the installed version",
			facts: Facts{Operator: "widgets", Version: "1.1.0", Targets: []Target{dev("d1", "1.1.0")}},
		},
		{
			name:  "patch bump needs Admin by default: every upgrade does",
			facts: Facts{Operator: "widgets", Version: "1.1.3", Targets: []Target{dev("d1", "1.1.2")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.1.2 → 1.1.3 (patch upgrade) on d1"}},
		},
		{
			name:   "level minor: a patch bump passes",
			policy: Policy{UpgradeLevel: LevelMinor},
			facts:  Facts{Operator: "widgets", Version: "1.1.3", Targets: []Target{dev("d1", "1.1.2")}},
		},
		{
			name:  "v prefix and the same version",
			facts: Facts{Operator: "widgets", Version: "v1.1.0", Targets: []Target{dev("d1", "1.1.0")}},
		},
		{
			name:   "level minor: prerelease to release of the same minor passes",
			policy: Policy{UpgradeLevel: LevelMinor},
			facts:  Facts{Operator: "widgets", Version: "1.2.0", Targets: []Target{dev("d1", "1.2.0-rc.1")}},
		},
		{
			name:  "prerelease to release needs Admin by default",
			facts: Facts{Operator: "widgets", Version: "1.2.0", Targets: []Target{dev("d1", "1.2.0-rc.1")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.2.0-rc.1 → 1.2.0 (patch upgrade) on d1"}},
		},
		{
			name:  "minor upgrade needs Admin",
			facts: Facts{Operator: "widgets", Version: "1.1.0", Targets: []Target{dev("d1", "1.0.0"), dev("d2", "")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.0.0 → 1.1.0 (minor upgrade) on d1"}},
		},
		{
			name:  "major upgrade, grouped by installed version",
			facts: Facts{Operator: "widgets", Version: "2.0.0", Targets: []Target{dev("d2", "1.0.0"), dev("d1", "1.0.0"), dev("d3", "1.1.0")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.0.0 → 2.0.0 (major upgrade) on d1, d2; 1.1.0 → 2.0.0 (major upgrade) on d3"}},
		},
		{
			name:  "downgrade across a minor counts",
			facts: Facts{Operator: "widgets", Version: "1.0.0", Targets: []Target{dev("d1", "1.1.0")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.1.0 → 1.0.0 (minor downgrade) on d1"}},
		},
		{
			name:  "not semver and different",
			facts: Facts{Operator: "widgets", Version: "latest", Targets: []Target{dev("d1", "1.1.0")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.1.0 → latest (not semver) on d1"}},
		},
		{
			name:   "level major: a minor upgrade passes",
			policy: Policy{UpgradeLevel: LevelMajor},
			facts:  Facts{Operator: "widgets", Version: "1.1.0", Targets: []Target{dev("d1", "1.0.0")}},
		},
		{
			name:   "level patch: a patch upgrade needs Admin",
			policy: Policy{UpgradeLevel: LevelPatch},
			facts:  Facts{Operator: "widgets", Version: "1.0.1", Targets: []Target{dev("d1", "1.0.0")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.0.0 → 1.0.1 (patch upgrade) on d1"}},
		},
		{
			name:  "breaking CRDs need Admin in any environment",
			facts: Facts{Operator: "widgets", Version: "1.0.1", Targets: []Target{dev("d1", "1.0.1")}, BreakingCRDs: []string{"b.example.com", "a.example.com", "b.example.com", ""}},
			want: []Requirement{{Kind: KindBreakingCRD, RequiredRole: RoleAdmin, Count: 1,
				Reason: "breaking changes to the CRDs a.example.com, b.example.com of widgets 1.0.1"}},
		},
		{
			name:  "Production first install needs its owner",
			facts: Facts{Operator: "widgets", Version: "1.0.0", Targets: []Target{dev("d1", ""), prod("p2", ""), prod("p1", "")}},
			want: []Requirement{{Kind: KindProduction, RequiredRole: RoleProductionOwner, Count: 1,
				Reason: "widgets 1.0.0 to the Production clusters p1, p2"}},
		},
		{
			name:   "all three, multi-level counts",
			policy: Policy{Count: map[string]int{KindProduction: 2, KindVersionUpgrade: 3}},
			facts: Facts{Operator: "widgets", Version: "2.0.0", BreakingCRDs: []string{"w.example.com"},
				Targets: []Target{prod("p1", "1.0.0"), prod("p2", "1.0.0"), prod("p3", "1.0.0"), prod("p4", "1.0.0"), prod("p5", "1.0.0"), prod("p6", "1.0.0")}},
			want: []Requirement{
				{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 3,
					Reason: "operator version upgrade of widgets: 1.0.0 → 2.0.0 (major upgrade) on p1, p2, p3, p4, p5 and 1 more"},
				{Kind: KindBreakingCRD, RequiredRole: RoleAdmin, Count: 1, Reason: "breaking changes to the CRDs w.example.com of widgets 2.0.0"},
				{Kind: KindProduction, RequiredRole: RoleProductionOwner, Count: 2,
					Reason: "widgets 2.0.0 to the Production clusters p1, p2, p3, p4, p5 and 1 more"},
			},
		},
		{
			name:   "workflow off in Production: its clusters ask nothing, Dev's still do",
			policy: Policy{Disabled: []store.Environment{store.EnvironmentProduction}},
			facts:  Facts{Operator: "widgets", Version: "2.0.0", Targets: []Target{prod("p1", "1.0.0"), dev("d1", "1.0.0")}},
			want: []Requirement{{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1,
				Reason: "operator version upgrade of widgets: 1.0.0 → 2.0.0 (major upgrade) on d1"}},
		},
		{
			name:   "workflow off everywhere: nothing",
			policy: Policy{Disabled: []store.Environment{store.EnvironmentDev, store.EnvironmentStaging, store.EnvironmentProduction}},
			facts:  Facts{Operator: "widgets", Version: "2.0.0", Targets: []Target{prod("p1", "1.0.0"), dev("d1", "1.0.0")}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.policy.Required(tc.facts)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Required (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequiredDefaultPolicy(t *testing.T) {
	got := Required(Facts{Operator: "w", Version: "1.0.1", Targets: []Target{prod("p", "1.0.0")}})
	if len(got) != 2 || got[0].Kind != KindVersionUpgrade || got[1].Kind != KindProduction || got[0].Count != 1 || got[1].Count != 1 {
		t.Fatalf("Required = %+v: a patch upgrade to Production wants an Admin and the Production owner", got)
	}
	for _, env := range []store.Environment{store.EnvironmentDev, store.EnvironmentStaging, store.EnvironmentProduction} {
		if !(Policy{}).Enabled(env) {
			t.Errorf("the default policy has the workflow off in %s", env)
		}
	}
}

func TestParseEnvironments(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []store.Environment
	}{
		{"Dev,Staging,Production", nil},
		{" Production , Staging", []store.Environment{store.EnvironmentDev}},
		{"Production", []store.Environment{store.EnvironmentDev, store.EnvironmentStaging}},
		{"none", []store.Environment{store.EnvironmentDev, store.EnvironmentStaging, store.EnvironmentProduction}},
	} {
		got, err := ParseEnvironments(tc.in)
		if err != nil {
			t.Errorf("ParseEnvironments(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseEnvironments(%q) (-want +got):\n%s", tc.in, diff)
		}
		if err := (Policy{Disabled: got}).Validate(); err != nil {
			t.Errorf("ParseEnvironments(%q): its policy: %v", tc.in, err)
		}
	}
	for _, bad := range []string{"", "  ", "production", "Dev,QA", "Dev,,Staging", "none,Dev"} {
		_, err := ParseEnvironments(bad)
		if e, ok := invalid.As(err); !ok || e.Field != "approvals.environments" || e.Message == "" {
			t.Errorf("ParseEnvironments(%q) = %v, want a field error on approvals.environments", bad, err)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		field  string
	}{
		{Policy{}, ""},
		{Policy{UpgradeLevel: LevelPatch, Count: map[string]int{KindProduction: 2, KindBreakingCRD: 0}}, ""},
		{Policy{UpgradeLevel: "huge"}, "approvals.upgradeLevel"},
		{Policy{Count: map[string]int{"staging": 1}}, "approvals.count"},
		{Policy{Count: map[string]int{KindProduction: -1}}, "approvals.count.production"},
		{Policy{Count: map[string]int{KindProduction: 11}}, "approvals.count.production"},
		{Policy{Disabled: []store.Environment{store.EnvironmentDev, "QA"}}, "approvals.environments"},
	} {
		err := tc.policy.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.policy, err)
			}
			continue
		}
		e, ok := invalid.As(err)
		if !ok || e.Field != tc.field {
			t.Errorf("%+v: error %v, want a field error for %s", tc.policy, err, tc.field)
		}
	}
}

func TestParseCounts(t *testing.T) {
	got, err := ParseCounts(" production=2, versionUpgrade = 1 ,")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{KindProduction: 2, KindVersionUpgrade: 1}, got); diff != "" {
		t.Errorf("ParseCounts (-want +got):\n%s", diff)
	}
	if got, err := ParseCounts(""); err != nil || len(got) != 0 {
		t.Errorf("ParseCounts(\"\") = %v, %v", got, err)
	}
	for _, bad := range []string{"production", "production=two", "moon=1", "production=99"} {
		if _, err := ParseCounts(bad); err == nil {
			t.Errorf("ParseCounts(%q) accepted", bad)
		} else if _, ok := invalid.As(err); !ok {
			t.Errorf("ParseCounts(%q): %v is not an *invalid.Error", bad, err)
		}
	}
}

func TestApprovalRecord(t *testing.T) {
	exp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := Requirement{Kind: KindProduction, RequiredRole: RoleProductionOwner, Count: 2, Reason: "to prod"}
	a := r.Approval("dep-1", "alice", exp)
	want := &store.Approval{DeploymentID: "dep-1", Kind: KindProduction, RequiredRole: RoleProductionOwner, Required: 2,
		RequestedBy: "alice", Status: store.ApprovalPending, Reason: "to prod", ExpiresAt: exp}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("Approval (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(r, RequirementOf(a)); diff != "" {
		t.Errorf("RequirementOf (-want +got):\n%s", diff)
	}
	if got := (Requirement{Kind: KindBreakingCRD, RequiredRole: RoleAdmin}).Approval("d", "a", exp).Required; got != 1 {
		t.Errorf("a zero count is stored as %d, want 1", got)
	}
}

func TestDeniedErrorMatches(t *testing.T) {
	var err error = &DeniedError{Reason: ReasonRole, Message: "no"}
	if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "no") {
		t.Fatalf("DeniedError does not match ErrNotAllowed: %v", err)
	}
}
