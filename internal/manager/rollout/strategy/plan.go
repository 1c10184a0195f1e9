package strategy

import (
	"fmt"
	"math"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Target is a cluster of the deployment and its environment.
type Target = request.Target

// StageKind is what a stage does to its clusters.
type StageKind string

const (
	// StageInstall installs or upgrades the operator version on the stage's clusters.
	StageInstall StageKind = "install"
	// StageSwitch (BlueGreen) points the webhooks to green and scales blue's controllers to 0.
	StageSwitch StageKind = "switch"
)

// DefaultSwitchMonitor is how long BlueGreen watches after the switch (the design's 5 minutes).
const DefaultSwitchMonitor = 5 * time.Minute

// Stage is one step of a plan.
type Stage struct {
	Index int
	Kind  StageKind
	// Environment of all Clusters; "" when they span several (Direct, Canary, BlueGreen's switch).
	Environment string
	// Clusters in the order to start them.
	Clusters []string
	// Parallel is how many of Clusters are worked on at once: 1 ≤ Parallel ≤ len(Clusters).
	Parallel int
	// Namespace to install into; "" is the operator's own namespace (BlueGreen: green).
	Namespace string
	// Percentage is the share of the deployment's clusters done once this stage is (cumulative).
	Percentage float64
	// HealthChecks: the stage is judged by health checks (false: Direct with skipHealthChecks).
	HealthChecks bool
	// Hold is how long to watch the stage's clusters after they are installed and first found
	// healthy before the stage is judged (evaluationPeriod, validationPeriod, the switch
	// monitor); 0 judges it on that first check.
	Hold time.Duration
	// SuccessThreshold is the fraction of this stage's Clusters (not of the clusters done so
	// far) that must be healthy at the end of Hold (1: all). See Passed.
	SuccessThreshold float64
	// Pause is the wait after the stage passed, before the next one starts.
	Pause time.Duration
	// WaitForSwitch (BlueGreen switch with autoSwitch false): the stage starts only on
	// POST /deployments/{id}/switch.
	WaitForSwitch bool
}

// Passed reports whether healthy of the stage's clusters meet its SuccessThreshold; a stage
// without health checks always passes.
func (s *Stage) Passed(healthy int) bool {
	if !s.HealthChecks {
		return true
	}
	return float64(healthy) >= s.SuccessThreshold*float64(len(s.Clusters))-1e-9
}

// Plan is the stages of a deployment, in order.
type Plan struct {
	Strategy api.Strategy
	// Targets sorted by environment then name.
	Targets []Target
	Stages  []Stage
	// BlueGreen only: blueGreenConfig.blueNamespace (else the operator's namespace), the
	// namespace green goes to by default, and whether the switch is automatic. Where blue really
	// is comes from the live release on each cluster; planning checks it is in a given
	// blueNamespace.
	BlueNamespace  string
	GreenNamespace string
	AutoSwitch     bool
}

// Options are the engine's settings that shape plans. The zero value (or nil) is the defaults.
type Options struct {
	// OperatorNamespace is the operator's namespace: BlueGreen's blue namespace when the
	// request gives none (green then defaults to it + "-green").
	OperatorNamespace string
	// SwitchMonitor is the hold of BlueGreen's switch stage; 0 means DefaultSwitchMonitor.
	SwitchMonitor time.Duration
	// HoldScale multiplies every hold and pause (the engine's TestHoldScale, for tests and
	// benchmarks only); 0 and 1 leave them as planned.
	HoldScale float64
}

// NewPlan plans spec (request.Resolve's or request.FromDeployment's). No targets, a repeated
// target or settings missing for the strategy are errors.
func NewPlan(spec *request.Spec, opts *Options) (*Plan, error) {
	if opts == nil {
		opts = &Options{}
	}
	if len(spec.Targets) == 0 {
		return nil, &invalid.Error{Field: "clusters", Reason: "required", Message: "no target clusters"}
	}
	sorted := append([]Target(nil), spec.Targets...)
	request.SortTargets(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Name == sorted[i-1].Name {
			return nil, invalid.Reasoned("clusters", "duplicate", nil, "cluster %q is a target twice", sorted[i].Name)
		}
	}
	p := &Plan{Strategy: spec.Strategy, Targets: sorted}
	var err error
	switch s := spec.Settings; {
	case s.Strategy == api.StrategyCanary && s.Canary != nil:
		p.canary(s.Canary)
	case s.Strategy == api.StrategyRolling && s.Rolling != nil:
		err = p.rolling(s.Rolling)
	case s.Strategy == api.StrategyDirect && s.Direct != nil:
		p.direct(s.Direct)
	case s.Strategy == api.StrategyBlueGreen && s.BlueGreen != nil:
		err = p.blueGreen(s.BlueGreen, opts)
	default:
		err = invalid.Reasoned("strategy", "invalid", nil, "no resolved settings for strategy %q", s.Strategy)
	}
	if err != nil {
		return nil, err
	}
	for i := range p.Stages {
		p.Stages[i].Index = i
	}
	p.scaleHolds(opts.HoldScale)
	return p, nil
}

// PlanOf plans a stored deployment (plans are deterministic, so every replica, every engine step
// and the API get the same): its Spec as request.FromDeployment rebuilds it, planned with opts,
// a Canary keeping the stages it was stored with (Restage). The engine and the API both call it,
// with the engine's Options, so that they never disagree on a deployment's stages and holds.
func PlanOf(d *store.Deployment, opts *Options) (*Plan, *request.Spec, error) {
	spec, err := request.FromDeployment(d)
	if err != nil {
		return nil, nil, err
	}
	plan, err := NewPlan(spec, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("deployment %s: planning: %w", d.ID, err)
	}
	stored := make(map[string]int, len(d.Clusters))
	for _, c := range d.Clusters {
		stored[c.ClusterName] = c.Stage
	}
	// A Canary created by an older manager keeps the stages it was created with.
	if _, err := plan.Restage(stored); err != nil {
		return nil, nil, fmt.Errorf("deployment %s: its stored stages: %w", d.ID, err)
	}
	return plan, spec, nil
}

// scaleHolds multiplies the holds and pauses by s (Options.HoldScale; 0 and 1 leave them).
func (p *Plan) scaleHolds(s float64) {
	if s == 0 || s == 1 {
		return
	}
	for i := range p.Stages {
		p.Stages[i].Hold = time.Duration(float64(p.Stages[i].Hold) * s)
		p.Stages[i].Pause = time.Duration(float64(p.Stages[i].Pause) * s)
	}
}

// StageOf returns the index of the install stage that deploys cluster, or -1.
func (p *Plan) StageOf(cluster string) int {
	for _, s := range p.Stages {
		if s.Kind != StageInstall {
			continue
		}
		for _, c := range s.Clusters {
			if c == cluster {
				return s.Index
			}
		}
	}
	return -1
}

// Restage makes a Canary plan keep the stages its deployment was created with: stageOf is each
// cluster's stage as stored then (store.DeploymentCluster.Stage). Plans are recomputed at every
// step, so a deployment planned by an older manager (whose Canary also cut at environment
// boundaries and repeated the increment) would otherwise find other stages after an upgrade of
// the manager, its stored stage index pointing elsewhere. When stageOf differs from the plan,
// the install stages are rebuilt from it (the clusters of each stored index, in target order,
// with this plan's hold and threshold). Other strategies plan as they always did and are left
// as they are. It reports whether the stages changed; stageOf must give every target a stage,
// the indexes 0..k-1 each used.
func (p *Plan) Restage(stageOf map[string]int) (bool, error) {
	if p.Strategy != api.StrategyCanary || len(p.Stages) == 0 {
		return false, nil
	}
	same, last := true, -1
	for _, t := range p.Targets {
		i, ok := stageOf[t.Name]
		if !ok || i < 0 || i >= len(p.Targets) {
			return false, fmt.Errorf("cluster %s has no stored stage (%d)", t.Name, i)
		}
		same = same && i == p.StageOf(t.Name)
		last = max(last, i)
	}
	if same {
		return false, nil
	}
	groups := make([][]Target, last+1)
	for _, t := range p.Targets {
		groups[stageOf[t.Name]] = append(groups[stageOf[t.Name]], t)
	}
	tmpl, done := p.Stages[0], 0
	p.Stages = p.Stages[:0:0]
	for i, ts := range groups {
		if len(ts) == 0 {
			return false, fmt.Errorf("no cluster is stored at stage %d of %d", i, last+1)
		}
		done += len(ts)
		st := tmpl
		st.Index, st.Environment, st.Clusters, st.Parallel, st.Percentage = i, environmentOf(ts), names(ts), len(ts), percent(done, len(p.Targets))
		p.Stages = append(p.Stages, st)
	}
	return true, nil
}

// MinDuration is the least time the plan takes: the sum of its holds and pauses.
func (p *Plan) MinDuration() time.Duration {
	var d time.Duration
	for _, s := range p.Stages {
		d += s.Hold + s.Pause
	}
	return d
}

func (p *Plan) String() string {
	s := fmt.Sprintf("%s:", p.Strategy)
	for _, st := range p.Stages {
		s += fmt.Sprintf(" [%s %v ×%d hold=%s]", st.Kind, st.Clusters, st.Parallel, st.Hold)
	}
	return s
}

func names(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// environmentOf is the environment shared by ts, or "".
func environmentOf(ts []Target) string {
	for _, t := range ts[1:] {
		if t.Environment != ts[0].Environment {
			return ""
		}
	}
	return ts[0].Environment
}

func percent(done, total int) float64 {
	return math.Round(float64(done)*10000/float64(total)) / 100
}
