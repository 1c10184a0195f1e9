package approvals

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Kinds of approval request, as store.Approval.Kind holds them.
const (
	KindVersionUpgrade = "versionUpgrade"
	KindBreakingCRD    = "breakingCRD"
	KindProduction     = "production"
)

// Kinds lists every kind, in the order Required returns them.
var Kinds = []string{KindVersionUpgrade, KindBreakingCRD, KindProduction}

// Roles a requirement names, as store.Approval.RequiredRole holds them.
const (
	RoleAdmin           = string(auth.Admin)
	RoleProductionOwner = string(auth.EnvironmentOwner) + ":" + string(store.EnvironmentProduction)
)

// Level is how large a version change must be to count as an operator version upgrade.
type Level string

const (
	// LevelMajor: only a change of major version (1.x → 2.x).
	LevelMajor Level = "major"
	// LevelMinor: a change of major or minor version (1.4.x → 1.5.0).
	LevelMinor Level = "minor"
	// LevelPatch: any change of version (1.4.2 → 1.4.3), the design's "every operator version
	// upgrade requires admin approval". The default.
	LevelPatch Level = "patch"
)

// DefaultLevel is the UpgradeLevel of the zero Policy.
const DefaultLevel = LevelPatch

// Policy tunes Required. The zero Policy is the default: every version change (LevelPatch) needs
// an Admin, the workflow is on in every environment, one approver per kind.
type Policy struct {
	// UpgradeLevel is the smallest version change that needs an Admin (empty: DefaultLevel).
	UpgradeLevel Level
	// Count is the number of distinct approvers each kind needs (missing or 0: 1), for
	// multi-level approval: {"production": 2} asks two different people.
	Count map[string]int
	// Disabled are the environments whose approval workflow is off (design FR-OP-003): their
	// clusters ask no approval of any kind; a deployment that also goes to other environments
	// still asks for those.
	Disabled []store.Environment
}

// Enabled reports whether the approval workflow is on for env.
func (p Policy) Enabled(env store.Environment) bool { return !slices.Contains(p.Disabled, env) }

// maxCount bounds Count: more approvers than that is a typo, not a policy.
const maxCount = 10

// Validate checks the policy, naming the wrong field as the configuration spells it.
func (p Policy) Validate() error {
	switch p.UpgradeLevel {
	case "", LevelMajor, LevelMinor, LevelPatch:
	default:
		return invalid.Field("approvals.upgradeLevel", "unknown level %q: want major, minor or patch", p.UpgradeLevel)
	}
	for _, env := range p.Disabled {
		if !env.Valid() {
			return invalid.Field("approvals.environments", "unknown environment %q: want Dev, Staging or Production", env)
		}
	}
	for kind, n := range p.Count {
		if !slices.Contains(Kinds, kind) {
			return invalid.Field("approvals.count", "unknown kind %q: want one of %s", kind, strings.Join(Kinds, ", "))
		}
		if n < 0 || n > maxCount {
			return invalid.Field("approvals.count."+kind, "%d approvers: want 1 to %d", n, maxCount)
		}
	}
	return nil
}

// ParseCounts reads the approver counts of a flag or environment variable:
// "production=2,breakingCRD=1". An empty string is no counts.
func ParseCounts(s string) (map[string]int, error) {
	counts := map[string]int{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, num, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if !ok || err != nil {
			return nil, invalid.Field("approvals.count", "%q: want kind=number, e.g. production=2", part)
		}
		counts[strings.TrimSpace(kind)] = n
	}
	if err := (Policy{Count: counts}).Validate(); err != nil {
		return nil, err
	}
	return counts, nil
}

// ParseEnvironments reads the environments whose approval workflow is on, as a flag gives them
// ("Staging,Production", or "none"), and returns the others: Policy.Disabled. An empty string is
// an error rather than "none", so that a value left out of a template never turns approvals off.
func ParseEnvironments(s string) ([]store.Environment, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, invalid.Field("approvals.environments", "empty: list the environments whose deployments need approvals (Dev, Staging, Production), or none")
	}
	on := map[store.Environment]bool{}
	if s != "none" {
		for part := range strings.SplitSeq(s, ",") {
			env := store.Environment(strings.TrimSpace(part))
			if !env.Valid() {
				return nil, invalid.Field("approvals.environments", "unknown environment %q: want Dev, Staging or Production (as spelled there), or none", clipName(string(env)))
			}
			on[env] = true
		}
	}
	var off []store.Environment
	for _, env := range []store.Environment{store.EnvironmentDev, store.EnvironmentStaging, store.EnvironmentProduction} {
		if !on[env] {
			off = append(off, env)
		}
	}
	return off, nil
}

// clipName bounds a name quoted in an error.
func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (p Policy) count(kind string) int {
	if n := p.Count[kind]; n > 0 {
		return n
	}
	return 1
}

// Target is one cluster a deployment goes to.
type Target struct {
	Cluster     string
	Environment store.Environment
	// Installed is the operator's version on the cluster now ("" when not installed).
	Installed string
}

// Facts is what the policy looks at: the deployment as planned.
type Facts struct {
	Operator string
	Version  string // the target version
	Targets  []Target
	// BreakingCRDs names the chart's CRDs whose new definition breaks the stored one on a
	// target whose environment has the approval workflow on (Policy.Enabled).
	BreakingCRDs []string
}

// Requirement is one approval a deployment waits for.
type Requirement struct {
	Kind         string // KindVersionUpgrade, KindBreakingCRD, KindProduction
	RequiredRole string // RoleAdmin or RoleProductionOwner
	Count        int    // distinct approvers needed
	Reason       string // for people: what needs approving and why
}

// Required is the default policy's Required.
func Required(f Facts) []Requirement { return Policy{}.Required(f) }

// Required returns the approvals f needs, in the order of Kinds; none when it may go ahead.
// Targets in a Disabled environment are left out (f.BreakingCRDs is the caller's to filter:
// planning lists only the CRDs that break on a cluster whose environment is Enabled).
func (p Policy) Required(f Facts) []Requirement {
	f.Targets = slices.DeleteFunc(slices.Clone(f.Targets), func(t Target) bool { return !p.Enabled(t.Environment) })
	var reqs []Requirement
	if reason := p.upgradeReason(f); reason != "" {
		reqs = append(reqs, Requirement{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: p.count(KindVersionUpgrade), Reason: reason})
	}
	if crds := sortedUnique(f.BreakingCRDs); len(crds) > 0 {
		reqs = append(reqs, Requirement{Kind: KindBreakingCRD, RequiredRole: RoleAdmin, Count: p.count(KindBreakingCRD),
			Reason: fmt.Sprintf("breaking changes to the CRDs %s of %s %s", names(crds), f.Operator, f.Version)})
	}
	var prod []string
	for _, t := range f.Targets {
		if t.Environment == store.EnvironmentProduction {
			prod = append(prod, t.Cluster)
		}
	}
	if prod = sortedUnique(prod); len(prod) > 0 {
		reqs = append(reqs, Requirement{Kind: KindProduction, RequiredRole: RoleProductionOwner, Count: p.count(KindProduction),
			Reason: fmt.Sprintf("%s %s to the Production clusters %s", f.Operator, f.Version, names(prod))})
	}
	return reqs
}

// upgradeReason describes the version upgrades among f's targets ("" for none), grouped by the
// installed version: "cert-manager 1.4.2 → 2.0.0 (major upgrade) on a, b; 1.9.0 → 2.0.0 …".
func (p Policy) upgradeReason(f Facts) string {
	level := p.UpgradeLevel
	if level == "" {
		level = DefaultLevel
	}
	byFrom := map[string][]string{}
	change := map[string]string{}
	for _, t := range f.Targets {
		if c := versionChange(t.Installed, f.Version, level); c != "" {
			byFrom[t.Installed] = append(byFrom[t.Installed], t.Cluster)
			change[t.Installed] = c
		}
	}
	if len(byFrom) == 0 {
		return ""
	}
	froms := make([]string, 0, len(byFrom))
	for from := range byFrom {
		froms = append(froms, from)
	}
	slices.Sort(froms)
	parts := make([]string, 0, len(froms))
	for _, from := range froms {
		parts = append(parts, fmt.Sprintf("%s → %s (%s) on %s", from, f.Version, change[from], names(sortedUnique(byFrom[from]))))
	}
	return fmt.Sprintf("operator version upgrade of %s: %s", f.Operator, strings.Join(parts, "; "))
}

// versionChange names the change from installed to target when it reaches level ("major
// upgrade", "minor downgrade", "version change"), or "" when it is no upgrade: nothing
// installed, the same version, or a smaller change than level.
func versionChange(installed, target string, level Level) string {
	if installed == "" || installed == target {
		return ""
	}
	from, err1 := semver.NewVersion(installed)
	to, err2 := semver.NewVersion(target)
	if err1 != nil || err2 != nil {
		return "not semver"
	}
	if from.Equal(to) {
		return ""
	}
	direction := "upgrade"
	if to.LessThan(from) {
		direction = "downgrade"
	}
	switch {
	case from.Major() != to.Major():
		return "major " + direction
	case level == LevelMajor:
		return ""
	case from.Minor() != to.Minor():
		return "minor " + direction
	case level == LevelMinor:
		return ""
	}
	return "patch " + direction
}

// maxNames bounds the names a reason lists.
const maxNames = 5

// names joins up to maxNames names and counts the rest.
func names(ns []string) string {
	if len(ns) <= maxNames {
		return strings.Join(ns, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ns[:maxNames], ", "), len(ns)-maxNames)
}

func sortedUnique(ss []string) []string {
	out := slices.Clone(ss)
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// Approval is the store record asking for r on a deployment: pending, expiring at expiresAt.
func (r Requirement) Approval(deploymentID, requestedBy string, expiresAt time.Time) *store.Approval {
	return &store.Approval{
		DeploymentID: deploymentID,
		Kind:         r.Kind,
		RequiredRole: r.RequiredRole,
		Required:     max(r.Count, 1),
		RequestedBy:  requestedBy,
		Status:       store.ApprovalPending,
		Reason:       r.Reason,
		ExpiresAt:    expiresAt,
	}
}

// RequirementOf is the requirement a stored approval asks for.
func RequirementOf(a *store.Approval) Requirement {
	return Requirement{Kind: a.Kind, RequiredRole: a.RequiredRole, Count: a.Required, Reason: a.Reason}
}
