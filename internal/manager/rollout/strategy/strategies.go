package strategy

import (
	"math"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
)

// canary cuts the sorted targets (environment, then name) at the stages' percentages: stage k
// ends at ceil(p_k·N/100) clusters, at least one; a stage that would add no cluster is merged
// into the next one (it disappears: its percentage is reached with the next stage's clusters).
// Stages may span environments: the design's 30 % stage is "Dev + Staging".
func (p *Plan) canary(c *api.CanarySettings) {
	n := len(p.Targets)
	start := 0
	for _, end := range canaryCuts(c.Stages, n) {
		ts := p.Targets[start:end]
		p.Stages = append(p.Stages, Stage{
			Kind: StageInstall, Environment: environmentOf(ts), Clusters: names(ts), Parallel: len(ts),
			Percentage: percent(end, n), HealthChecks: true, Hold: c.EvaluationPeriod,
			SuccessThreshold: c.SuccessThreshold,
		})
		start = end
	}
}

// canaryCuts returns the cumulative cluster counts of the stages at the percentages pcts
// (rising, the last 100) over n clusters: ceil(p·n/100), at least 1, strictly increasing (a
// count no larger than the one before is dropped), the last n.
func canaryCuts(pcts []float64, n int) []int {
	var cuts []int
	done := 0
	for i, pct := range pcts {
		cut := int(math.Ceil(pct*float64(n)/100 - 1e-9))
		cut = min(max(cut, 1), n)
		if i == len(pcts)-1 {
			cut = n
		}
		if cut > done {
			cuts = append(cuts, cut)
			done = cut
		}
	}
	return cuts
}

func (p *Plan) rolling(r *api.RollingSettings) error {
	order, err := request.ClusterOrder(r.ClusterOrder, p.Targets)
	if err != nil {
		return err
	}
	for i, t := range order {
		pause := r.PauseBetweenClusters
		if i == len(order)-1 {
			pause = 0
		}
		p.Stages = append(p.Stages, Stage{
			Kind: StageInstall, Environment: t.Environment, Clusters: []string{t.Name}, Parallel: 1,
			Percentage: percent(i+1, len(order)), HealthChecks: true, Hold: r.ValidationPeriod,
			SuccessThreshold: 1, Pause: pause,
		})
	}
	return nil
}

func (p *Plan) direct(d *api.DirectSettings) {
	parallel := len(p.Targets)
	if d.ParallelClusters > 0 && d.ParallelClusters < parallel {
		parallel = d.ParallelClusters
	}
	p.Stages = append(p.Stages, Stage{
		Kind: StageInstall, Environment: environmentOf(p.Targets), Clusters: names(p.Targets), Parallel: parallel,
		Percentage: 100, HealthChecks: !d.SkipHealthChecks, SuccessThreshold: 1,
	})
}

func (p *Plan) blueGreen(bg *api.BlueGreenSettings, opts *Options) error {
	var err error
	if p.BlueNamespace, p.GreenNamespace, err = bg.Namespaces(opts.OperatorNamespace); err != nil {
		return err
	}
	p.AutoSwitch = bg.AutoSwitch
	n := len(p.Targets)
	start := 0
	for i := 1; i <= n; i++ {
		if i < n && p.Targets[i].Environment == p.Targets[start].Environment {
			continue
		}
		ts := p.Targets[start:i]
		p.Stages = append(p.Stages, Stage{
			Kind: StageInstall, Environment: ts[0].Environment, Clusters: names(ts), Parallel: len(ts),
			Namespace: p.GreenNamespace, Percentage: percent(i, n), HealthChecks: true,
			Hold: bg.ValidationPeriod, SuccessThreshold: 1,
		})
		start = i
	}
	monitor := opts.SwitchMonitor
	if monitor <= 0 {
		monitor = DefaultSwitchMonitor
	}
	p.Stages = append(p.Stages, Stage{
		Kind: StageSwitch, Environment: environmentOf(p.Targets), Clusters: names(p.Targets), Parallel: n,
		Namespace: p.GreenNamespace, Percentage: 100, HealthChecks: true, Hold: monitor,
		SuccessThreshold: 1, WaitForSwitch: !bg.AutoSwitch,
	})
	return nil
}
