package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// approvalGated keeps the breaking changes of CRD name on clusters whose environment has the
// approval workflow on (approvals.Policy.Enabled). The others ask nothing: a crd.breaking
// event still names them, and says why no approval is asked.
func (e *Engine) approvalGated(ctx context.Context, d *store.Deployment, name string, on []crdChange) []crdChange {
	var gated []crdChange
	var off, offEnvs []string
	for _, ch := range on {
		env := store.Environment("")
		if c := clusterByName(d, ch.Cluster); c != nil {
			env = c.Environment
		}
		if e.cfg.Policy.Enabled(env) {
			gated = append(gated, ch)
			continue
		}
		off = append(off, ch.Cluster)
		if !slices.Contains(offEnvs, string(env)) {
			offEnvs = append(offEnvs, string(env))
		}
	}
	if len(off) > 0 {
		e.event(ctx, d.ID, "crd.breaking", "", fmt.Sprintf("CRD %s: the new definition breaks the one stored on %s; no approval asked there: the approval workflow is off for %s",
			name, strings.Join(off, ", "), strings.Join(offEnvs, ", ")), nil)
	}
	return gated
}
