package notifications

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// slackColors are the attachment colors by severity.
var slackColors = map[string]string{
	SeverityError: "#d0021b", SeverityWarning: "#f5a623", SeverityInfo: "#4a90e2", SeverityResolved: "#2eb886",
}

// slackIcons lead the message's text by severity.
var slackIcons = map[string]string{
	SeverityError: ":red_circle:", SeverityWarning: ":warning:", SeverityInfo: ":information_source:",
	SeverityResolved: ":large_green_circle:",
}

// field is one line of details: Slack attachment fields and the mail's lines.
type field struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

// fields are a payload's details, in the order people read them.
func fields(p Payload) []field {
	out := []field{{"Event", p.Kind, true}}
	if len(p.Environments) > 0 {
		out = append(out, field{"Environments", strings.Join(p.Environments, ", "), true})
	}
	if d := p.Deployment; d != nil {
		var names []string
		for _, c := range d.Clusters {
			names = append(names, c.Name+" ("+c.Status+")")
		}
		out = append(out, field{"Deployment", d.ID, false}, field{"Operator", d.Operator + " " + d.Version, true},
			field{"Strategy", d.Strategy, true}, field{"Status", d.PreviousStatus + " → " + d.Status, true},
			field{"Requested by", d.RequestedBy, true}, field{"Clusters", strings.Join(names, ", "), false},
			field{"Reason", d.Reason, false})
	}
	for _, a := range p.Approvals {
		out = append(out, field{"Approval " + a.Kind, fmt.Sprintf("%s (%d × %s, expires %s)", a.ID, a.Required,
			a.RequiredRole, a.ExpiresAt.UTC().Format(time.RFC3339)), false})
	}
	if o := p.Operator; o != nil {
		out = append(out, field{"Operator", o.Name, true}, field{"Cluster", o.Cluster, true},
			field{"Health", o.Health, true}, field{"Checked at", o.CheckedAt.UTC().Format(time.RFC3339), true})
		if o.Problems != "" {
			out = append(out, field{"Problems", o.Problems, false})
		}
	}
	if c := p.Cluster; c != nil {
		out = append(out, field{"Cluster", c.Name, true}, field{"Health", c.Health, true})
		if c.Reason != "" {
			out = append(out, field{"Reason", c.Reason, false})
		}
	}
	if p.URL != "" {
		out = append(out, field{"Link", p.URL, false})
	}
	return out
}

// slackMessage is a Slack-compatible incoming webhook body: text, and one attachment with the
// details (Slack, Mattermost and Rocket.Chat take both).
func slackMessage(n *store.Notification) ([]byte, error) {
	p, err := payloadOf(n)
	if err != nil {
		return nil, fmt.Errorf("the stored payload: %w", err)
	}
	text := fmt.Sprintf("%s *%s*", slackIcons[p.Severity], escapeSlack(p.Summary))
	fs := fields(p)
	for i := range fs {
		fs[i].Value = escapeSlack(fs[i].Value)
	}
	return json.Marshal(map[string]any{
		"text": text,
		"attachments": []map[string]any{{
			"color": slackColors[p.Severity], "fallback": p.Summary, "fields": fs,
			"footer": "slipway · delivery " + p.DeliveryID, "ts": p.Time.Unix(),
		}},
	})
}

// escapeSlack escapes the three characters Slack's message format gives a meaning.
func escapeSlack(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// mail sends the notification to the channel's recipients through the manager's SMTP server.
func (s *Service) mail(ctx context.Context, n *store.Notification, c *store.NotificationChannel) error {
	if s.cfg.Mailer == nil {
		return permanentError{fmt.Errorf("the manager has no SMTP server (--smtp-address) for channel %s", c.Name)}
	}
	var to api.SMTPSettings
	if err := json.Unmarshal(c.Config, &to); err != nil {
		return permanentError{fmt.Errorf("channel %s: stored settings: %w", c.Name, err)}
	}
	p, err := payloadOf(n)
	if err != nil {
		return permanentError{fmt.Errorf("the stored payload: %w", err)}
	}
	var b strings.Builder
	b.WriteString(p.Summary + "\n\n")
	for _, f := range fields(p) {
		fmt.Fprintf(&b, "%-14s %s\n", f.Title+":", f.Value)
	}
	fmt.Fprintf(&b, "\nDelivery %s of event %s, %s.\n", p.DeliveryID, p.EventID, p.Time.UTC().Format(time.RFC3339))
	return s.cfg.Mailer.Send(ctx, notify.Message{To: to.To, Subject: "[slipway] " + p.Summary, Body: b.String(),
		Date: s.now(), Headers: map[string]string{HeaderDelivery: n.ID, HeaderEvent: n.Kind}})
}
