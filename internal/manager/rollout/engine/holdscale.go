package engine

import (
	"time"

	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
)

// scaleHolds multiplies the plan's holds and pauses by Config.TestHoldScale (tests and
// benchmarks only; 0 and 1 leave them as planned).
func (e *Engine) scaleHolds(p *strategy.Plan) {
	s := e.cfg.TestHoldScale
	if s == 0 || s == 1 {
		return
	}
	for i := range p.Stages {
		p.Stages[i].Hold = time.Duration(float64(p.Stages[i].Hold) * s)
		p.Stages[i].Pause = time.Duration(float64(p.Stages[i].Pause) * s)
	}
}
