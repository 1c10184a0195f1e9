package strategy

import (
	"math"
	"slices"

	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
)

// canary cuts the sorted targets at the percentage steps and at environment boundaries.
func (p *Plan) canary(cfg *request.CanaryConfig) error {
	c, err := cfg.Resolve()
	if err != nil {
		return err
	}
	n := len(p.Targets)
	cuts := map[int]bool{n: true}
	for _, cut := range canaryCuts(c.InitialPercentage, c.IncrementPercentage, n) {
		cuts[cut] = true
	}
	for i := 1; i < n; i++ {
		if p.Targets[i].Environment != p.Targets[i-1].Environment {
			cuts[i] = true
		}
	}
	ends := make([]int, 0, len(cuts))
	for cut := range cuts {
		ends = append(ends, cut)
	}
	slices.Sort(ends)
	start := 0
	for _, end := range ends {
		ts := p.Targets[start:end]
		p.Stages = append(p.Stages, Stage{
			Kind: StageInstall, Environment: environmentOf(ts), Clusters: names(ts), Parallel: len(ts),
			Percentage: percent(end, n), HealthChecks: true, Hold: c.EvaluationPeriod,
			SuccessThreshold: c.SuccessThreshold,
		})
		start = end
	}
	return nil
}

// canaryCuts returns the cumulative cluster counts after each percentage step, strictly
// increasing and ending at n: step k reaches ceil(min(100, initial + k·increment)·n/100),
// at least one more cluster than the step before (steps that add none are skipped; the
// skipping is computed, so a tiny increment costs no more than n steps).
func canaryCuts(initial, increment float64, n int) []int {
	var cuts []int
	done := 0
	p := initial
	for done < n {
		cut := int(math.Ceil(p*float64(n)/100 - 1e-9))
		if cut <= done {
			cut = done + 1
		}
		if cut > n || p >= 100 {
			cut = n
		}
		cuts = append(cuts, cut)
		done = cut
		// The first step whose percentage exceeds done/n: initial + k·increment > done·100/n.
		k := math.Floor((float64(done)*100/float64(n)-initial)/increment) + 1
		next := initial + k*increment
		if next <= p { // no progress in floating point
			next = p + increment
		}
		p = math.Min(100, next)
	}
	return cuts
}

func (p *Plan) rolling(cfg *request.RollingConfig) error {
	r, err := cfg.Resolve()
	if err != nil {
		return err
	}
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

func (p *Plan) direct(cfg *request.DirectConfig) error {
	d, err := cfg.Resolve()
	if err != nil {
		return err
	}
	parallel := len(p.Targets)
	if d.ParallelClusters > 0 && d.ParallelClusters < parallel {
		parallel = d.ParallelClusters
	}
	p.Stages = append(p.Stages, Stage{
		Kind: StageInstall, Environment: environmentOf(p.Targets), Clusters: names(p.Targets), Parallel: parallel,
		Percentage: 100, HealthChecks: !d.SkipHealthChecks, SuccessThreshold: 1,
	})
	return nil
}

func (p *Plan) blueGreen(cfg *request.BlueGreenConfig, opts *Options) error {
	bg, err := cfg.Resolve()
	if err != nil {
		return err
	}
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
