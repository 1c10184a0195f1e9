package engine

import (
	"context"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// valuesFor is what a cluster of env is installed with: spec's values for env merged over the
// operator's default values (the deployment's values win). The deployment keeps its own values
// as requested.
func (e *Engine) valuesFor(ctx context.Context, d *store.Deployment, spec *request.Spec, env string) (map[string]any, error) {
	values, err := spec.ValuesFor(env)
	if err != nil {
		return nil, err
	}
	cfg, err := e.cfg.Store.OperatorConfigGet(ctx, d.OperatorID)
	if err != nil {
		return nil, fmt.Errorf("reading the default values of operator %s: %w", d.OperatorName, err)
	}
	return request.WithDefaults(cfg.DefaultValues, values)
}
