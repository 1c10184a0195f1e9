package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// What a deployment waits for, computed where it is answered (never stored): from the stored
// deployment, the plan its strategy config gives (holds, pauses, the BlueGreen switch), its
// pending approvals, and for a queued one the deployments ahead of it.

// waitContext is what the deployments of one answer share: one approvals read, one queue read
// and one operators read for a whole page, done only when a deployment of the page needs them.
type waitContext struct {
	now time.Time
	// plan are the rollout engine's plan options (its switch monitor, its hold scale): a
	// deployment's stages and holds are the engine's (strategy.PlanOf).
	plan strategy.Options
	// namespaces are the operators' namespaces by operator id (BlueGreen's default blue), read
	// when a BlueGreen deployment of the page is deploying.
	namespaces map[string]string
	approvals  map[string][]*store.Approval // pending, by deployment id
	running    int                          // deployments admitted and not finished
	queued     []*store.Deployment          // Queued, newest first
}

// deploymentsOut is ds with what each waits for.
func (s *Server) deploymentsOut(ctx context.Context, ds []*store.Deployment) ([]api.Deployment, error) {
	wc, err := s.waitContextFor(ctx, ds)
	if err != nil {
		return nil, err
	}
	out := make([]api.Deployment, len(ds))
	for i, d := range ds {
		out[i] = deploymentOut(d)
		wc.apply(d, &out[i])
	}
	return out, nil
}

func (s *Server) waitContextFor(ctx context.Context, ds []*store.Deployment) (*waitContext, error) {
	wc := &waitContext{now: s.now(), plan: s.rollouts.PlanOptions(), approvals: map[string][]*store.Approval{}}
	need := map[string]bool{}
	queued, blueGreen := false, false
	for _, d := range ds {
		switch d.Status {
		case store.DeploymentWaitingApproval:
			need[d.ID] = true
		case store.DeploymentQueued:
			queued = true
		case store.DeploymentDeploying, store.DeploymentValidating:
			blueGreen = blueGreen || d.Strategy == string(api.StrategyBlueGreen)
		}
	}
	if err := s.pendingApprovals(ctx, need, wc.approvals); err != nil {
		return nil, err
	}
	if blueGreen {
		var err error
		if wc.namespaces, err = s.operatorNamespaces(ctx); err != nil {
			return nil, err
		}
	}
	if !queued {
		return wc, nil
	}
	counts, err := s.store.DeploymentCountByStatus(ctx)
	if err != nil {
		return nil, err
	}
	for _, st := range []store.DeploymentStatus{store.DeploymentPlanning, store.DeploymentDeploying, store.DeploymentValidating, store.DeploymentRollingBack} {
		wc.running += counts[st]
	}
	wc.queued, err = s.store.DeploymentList(ctx, &store.DeploymentListParams{Status: store.DeploymentQueued, Limit: store.MaxLimit})
	return wc, err
}

// operatorNamespaces are every operator's namespace by operator id, in pages of store.MaxLimit.
func (s *Server) operatorNamespaces(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	after := ""
	for {
		page, err := s.store.OperatorList(ctx, &store.OperatorListParams{After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, err
		}
		for _, op := range page {
			out[op.ID] = op.Namespace
		}
		if len(page) < store.MaxLimit {
			return out, nil
		}
		after = page[len(page)-1].Name
	}
}

// pendingApprovals reads the pending approvals of the deployments in need into out: pages of
// every pending approval (one page almost always), until each deployment's are found.
func (s *Server) pendingApprovals(ctx context.Context, need map[string]bool, out map[string][]*store.Approval) error {
	before := ""
	for len(need) > 0 {
		page, err := s.store.ApprovalList(ctx, &store.ApprovalListParams{Status: store.ApprovalPending, Before: before, Limit: store.MaxLimit})
		if err != nil {
			return err
		}
		for _, a := range page {
			out[a.DeploymentID] = append(out[a.DeploymentID], a)
		}
		for id := range need {
			if len(out[id]) > 0 {
				delete(need, id)
			}
		}
		if len(page) < store.MaxLimit {
			return nil
		}
		before = page[len(page)-1].ID
	}
	return nil
}

// apply sets out's waiting and each of its clusters' from d.
func (wc *waitContext) apply(d *store.Deployment, out *api.Deployment) {
	w, clusters := wc.of(d)
	out.Waiting = w
	for i := range out.Clusters {
		out.Clusters[i].Waiting = clusters[out.Clusters[i].Name]
	}
}

// of is what d waits for, and the reason each of its waiting clusters gives.
func (wc *waitContext) of(d *store.Deployment) (*api.Waiting, map[string]string) {
	clusters := map[string]string{}
	pending := func(msg string) {
		for _, c := range d.Clusters {
			if c.Status == store.ClusterPending {
				clusters[c.ClusterName] = msg
			}
		}
	}
	switch {
	case d.Status.Terminal():
		return nil, clusters
	case d.Status == store.DeploymentQueued:
		w := wc.queuedWait(d)
		pending(w.Message)
		return w, clusters
	case d.Status == store.DeploymentWaitingApproval:
		w := approvalWait(wc.approvals[d.ID])
		if w != nil {
			pending(w.Message)
		}
		return w, clusters
	case d.PausedAt != nil:
		w := &api.Waiting{Reason: api.WaitPaused, Message: "paused by " + d.PausedBy}
		if d.PauseReason != "" {
			w.Message += ": " + d.PauseReason
		}
		pending(w.Message)
		return w, clusters
	case d.Status == store.DeploymentDeploying || d.Status == store.DeploymentValidating:
		return wc.stageWait(d, clusters)
	}
	return nil, clusters
}

func (wc *waitContext) queuedWait(d *store.Deployment) *api.Waiting {
	ahead := 0
	for _, q := range wc.queued {
		if q.ID != d.ID && q.CreatedAt.Before(d.CreatedAt) {
			ahead++
		}
	}
	n := wc.running + ahead
	return &api.Waiting{Reason: api.WaitQueued, Message: fmt.Sprintf("queued behind %d deployment%s (%d running, %d queued before it)",
		n, plural(n), wc.running, ahead)}
}

// approvalWait describes the pending approvals (nil when none is pending any more).
func approvalWait(list []*store.Approval) *api.Waiting {
	if len(list) == 0 {
		return nil
	}
	slices.SortFunc(list, func(a, b *store.Approval) int { return a.CreatedAt.Compare(b.CreatedAt) })
	w := &api.Waiting{Reason: api.WaitApproval, Role: list[0].RequiredRole}
	var parts []string
	for _, a := range list {
		given := 0
		for _, dec := range a.Decisions {
			if dec.Approve {
				given++
			}
		}
		p := "by " + approverOf(a.RequiredRole, a.Required)
		if a.Required > 1 {
			p += fmt.Sprintf(" (%d of %d given)", given, a.Required)
		}
		parts = append(parts, p)
		if w.Until == nil || a.ExpiresAt.Before(*w.Until) {
			at := a.ExpiresAt
			w.Until = &at
		}
	}
	w.Message = "approval " + strings.Join(parts, " and ")
	return w
}

// approverOf is who may approve: "an Admin", "2 Admins", "an EnvironmentOwner of Production (or an Admin)".
func approverOf(role string, n int) string {
	who, env, owner := role, "", false
	if r, e, ok := strings.Cut(role, ":"); ok {
		who, env, owner = r, e, true
	}
	s := "an " + who
	if n > 1 {
		s = fmt.Sprintf("%d %ss", n, who)
	}
	if owner {
		s += " of " + env + " (or an Admin)"
	}
	return s
}

// stageWait is what a deploying deployment waits for in its current stage: the BlueGreen switch,
// the stage's hold, or the pause before the stage.
func (wc *waitContext) stageWait(d *store.Deployment, clusters map[string]string) (*api.Waiting, map[string]string) {
	opts := wc.plan
	opts.OperatorNamespace = wc.namespaces[d.OperatorID]
	plan, _, err := strategy.PlanOf(d, &opts)
	if err != nil || d.Stage >= len(plan.Stages) {
		return nil, clusters
	}
	st := plan.Stages[d.Stage]
	switch {
	case st.Kind == strategy.StageSwitch && d.SwitchedAt == nil && st.WaitForSwitch && !d.SwitchRequested:
		w := &api.Waiting{Reason: api.WaitSwitch, Message: "switch to green: green is validated on every cluster"}
		for _, c := range d.Clusters {
			if c.Status == store.ClusterValidating || c.Status == store.ClusterHealthy {
				clusters[c.ClusterName] = "switch to green"
			}
		}
		return w, clusters
	case d.StageStartedAt != nil && st.Hold > 0 && wc.now.Before(d.StageStartedAt.Add(st.Hold)):
		until := d.StageStartedAt.Add(st.Hold)
		w := &api.Waiting{Reason: api.WaitEvaluation, Until: &until, Message: holdName(plan.Strategy, st) + ", " + left(until.Sub(wc.now)) + " left"}
		for _, c := range d.Clusters {
			switch {
			case c.Status == store.ClusterValidating && slices.Contains(st.Clusters, c.ClusterName):
				clusters[c.ClusterName] = w.Message
			case c.Status == store.ClusterPending && c.Stage > d.Stage:
				clusters[c.ClusterName] = fmt.Sprintf("waiting for stage %d (%s)", d.Stage+1, w.Message)
			}
		}
		return w, clusters
	case d.StageStartedAt == nil && d.Stage > 0 && plan.Stages[d.Stage-1].Pause > 0 && d.NextRunAt != nil && d.NextRunAt.After(wc.now) && stageNotStarted(d, st):
		until := *d.NextRunAt
		w := &api.Waiting{Reason: api.WaitPause, Until: &until, Message: "pause between clusters, " + left(until.Sub(wc.now)) + " left"}
		for _, name := range st.Clusters {
			clusters[name] = w.Message
		}
		return w, clusters
	}
	return nil, clusters
}

// stageNotStarted: none of the stage's clusters has been worked on.
func stageNotStarted(d *store.Deployment, st strategy.Stage) bool {
	for _, c := range d.Clusters {
		if slices.Contains(st.Clusters, c.ClusterName) && c.Status != store.ClusterPending {
			return false
		}
	}
	return true
}

func holdName(s api.Strategy, st strategy.Stage) string {
	switch {
	case st.Kind == strategy.StageSwitch:
		return "monitoring after the switch"
	case s == api.StrategyCanary:
		return "evaluation period"
	}
	return "validation period"
}

// left is a duration for people: "3 m 10 s", "1 h 5 m", "40 s".
func left(d time.Duration) string {
	d = max(d.Round(time.Second), 0)
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0 && m > 0:
		return fmt.Sprintf("%d h %d m", h, m)
	case h > 0:
		return fmt.Sprintf("%d h", h)
	case m > 0 && s > 0:
		return fmt.Sprintf("%d m %d s", m, s)
	case m > 0:
		return fmt.Sprintf("%d m", m)
	}
	return fmt.Sprintf("%d s", s)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
