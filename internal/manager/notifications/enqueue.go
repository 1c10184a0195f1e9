package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Enqueue stores ev as one pending delivery per channel whose routes take it (or for ev.Channel
// alone), through ex: call it with the transaction that records ev's cause, and the
// notification exists exactly when the cause does. It returns the deliveries stored.
func (s *Service) Enqueue(ctx context.Context, ex store.Executor, ev Event) ([]*store.Notification, error) {
	channels, err := ex.NotificationChannelListAll(ctx)
	if err != nil {
		return nil, err
	}
	envs := inOrder(ev.Environments)
	p := ev.Payload
	p.EventID, p.Kind, p.Severity = uuid.NewString(), ev.Kind, severityOf(ev.Kind)
	if p.Time.IsZero() {
		p.Time = s.now().UTC()
	}
	p.Environments = make([]string, 0, len(envs))
	for _, e := range envs {
		p.Environments = append(p.Environments, string(e))
	}
	var out []*store.Notification
	for _, c := range channels {
		if (ev.Channel != "" && c.Name != ev.Channel) || (ev.Channel == "" && !matches(c.Routes, ev.Kind, envs)) {
			continue
		}
		p.DeliveryID = uuid.NewString()
		body, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		n, err := ex.NotificationInsert(ctx, &store.Notification{ID: p.DeliveryID, EventID: p.EventID, ChannelID: c.ID,
			ChannelName: c.Name, ChannelKind: c.Kind, Kind: ev.Kind, Subject: ev.Subject, Environments: envs,
			Summary: p.Summary, Payload: body, CreatedAt: p.Time})
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// link is path under the public URL ("" without one); segments are escaped one by one.
func (s *Service) link(segments ...string) string {
	if s.cfg.PublicURL == "" {
		return ""
	}
	u := s.cfg.PublicURL + "/api/v1"
	for _, seg := range segments {
		u += "/" + url.PathEscape(seg)
	}
	return u
}

// DeploymentStatus is called in the transaction that moved d from status from to its status:
// Failed, RolledBack, WaitingApproval (with its pending approvals) and Completed are notified.
func (s *Service) DeploymentStatus(ctx context.Context, tx store.Executor, from store.DeploymentStatus, d *store.Deployment) error {
	if from == d.Status {
		return nil
	}
	ev := deploymentEvent(from, d)
	if ev.Kind == "" {
		return nil
	}
	ev.Payload.URL = s.link("deployments", d.ID)
	if d.Status == store.DeploymentWaitingApproval {
		pending, err := tx.ApprovalList(ctx, &store.ApprovalListParams{DeploymentID: d.ID, Status: store.ApprovalPending, Limit: 100})
		if err != nil {
			return err
		}
		for _, a := range pending {
			ev.Payload.Approvals = append(ev.Payload.Approvals, ApprovalInfo{ID: a.ID, Kind: a.Kind,
				RequiredRole: a.RequiredRole, Required: a.Required, Reason: a.Reason, ExpiresAt: a.ExpiresAt})
		}
	}
	_, err := s.Enqueue(ctx, tx, ev)
	return err
}

// OperatorHealth is called in the transaction that records an operator's health check on a
// cluster, with the check's problems in one line: the first Unhealthy check after anything else
// is notified (operator.unhealthy, saying whether failed checks roll back or only alert: alert
// is why they only alert), and the first Healthy one after that (operator.recovered). Degraded (a
// check that could not run) changes nothing.
func (s *Service) OperatorHealth(ctx context.Context, tx store.Executor, rec *store.OperatorHealth, problems, alert string) error {
	if rec.Health != string(store.HealthHealthy) && rec.Health != string(store.HealthUnhealthy) {
		return nil
	}
	change, err := tx.NotificationStateSet(ctx, "operator/"+rec.OperatorName+"/"+rec.ClusterName, rec.Health, rec.CheckedAt)
	if err != nil || !change.Changed {
		return err
	}
	kind := KindOperatorUnhealthy
	if rec.Health == string(store.HealthHealthy) {
		if change.Previous != string(store.HealthUnhealthy) {
			return nil
		}
		kind = KindOperatorRecovered
	}
	env, err := environmentOf(ctx, tx, rec.ClusterName)
	if err != nil {
		return err
	}
	info := &OperatorInfo{Name: rec.OperatorName, Cluster: rec.ClusterName, Environment: string(env), Health: rec.Health,
		PreviousHealth: change.Previous, ConsecutiveFailures: rec.ConsecutiveFailures, DeploymentID: rec.DeploymentID,
		CheckedAt: rec.CheckedAt}
	summary := fmt.Sprintf("%s is Healthy again on %s", rec.OperatorName, place(rec.ClusterName, env))
	if kind == KindOperatorUnhealthy {
		info.Problems, info.OnUnhealthy, info.AlertReason = problems, "rollback", alert
		summary = fmt.Sprintf("%s is Unhealthy on %s: %s", rec.OperatorName, place(rec.ClusterName, env), problems)
		if alert != "" {
			info.OnUnhealthy = "alert"
			summary += "; no automatic rollback: " + alert
		}
	}
	_, err = s.Enqueue(ctx, tx, Event{Kind: kind, Subject: "operator/" + rec.OperatorName + "/" + rec.ClusterName,
		Environments: envList(env), Payload: Payload{Summary: summary, Operator: info,
			URL: s.link("clusters", rec.ClusterName, "operators", rec.OperatorName, "health")}})
	return err
}

// ClusterHealth is called in the transaction that records a cluster's health check: the first
// Unhealthy check after anything else is notified (cluster.unreachable), and the first Healthy
// one after that (cluster.recovered).
func (s *Service) ClusterHealth(ctx context.Context, tx store.Executor, c *store.Cluster) error {
	if c.Health != store.HealthHealthy && c.Health != store.HealthUnhealthy {
		return nil
	}
	at := s.now().UTC()
	if c.HealthCheckedAt != nil {
		at = *c.HealthCheckedAt
	}
	change, err := tx.NotificationStateSet(ctx, "cluster/"+c.Name, string(c.Health), at)
	if err != nil || !change.Changed {
		return err
	}
	kind, summary := KindClusterUnreachable, fmt.Sprintf("cluster %s is Unhealthy: %s", place(c.Name, c.Environment), c.HealthReason)
	if c.Health == store.HealthHealthy {
		if change.Previous != string(store.HealthUnhealthy) {
			return nil
		}
		kind, summary = KindClusterRecovered, fmt.Sprintf("cluster %s is Healthy again", place(c.Name, c.Environment))
	}
	_, err = s.Enqueue(ctx, tx, Event{Kind: kind, Subject: "cluster/" + c.Name, Environments: envList(c.Environment),
		Payload: Payload{Summary: summary, URL: s.link("clusters", c.Name, "health"), Cluster: &ClusterInfo{
			Name: c.Name, Environment: string(c.Environment), Health: string(c.Health), PreviousHealth: change.Previous,
			Reason: c.HealthReason, CheckedAt: c.HealthCheckedAt}}})
	return err
}

// environmentOf is a cluster's environment ("" for a cluster no longer registered).
func environmentOf(ctx context.Context, ex store.Executor, name string) (store.Environment, error) {
	c, err := ex.ClusterGetByName(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	return c.Environment, nil
}

func envList(e store.Environment) []store.Environment {
	if e == "" {
		return nil
	}
	return []store.Environment{e}
}
