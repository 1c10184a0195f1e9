package notify

import (
	"fmt"
	"net/url"
	"strings"
	"text/template"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Pending is what a mail about a pending approval tells.
type Pending struct {
	ApprovalID   string
	DeploymentID string
	Kind         string // versionUpgrade, breakingCRD, production
	RequiredRole string // Admin, EnvironmentOwner:Production
	Required     int    // distinct approvers needed
	Reason       string
	Operator     string
	Version      string
	Strategy     string
	Clusters     []string
	RequestedBy  string
	ExpiresAt    time.Time
	// MigrationNotes are the migration notes of the CRD revisions the deployment moves the
	// clusters to (store.Executor.DeploymentMigrationNotesListMany).
	MigrationNotes []*store.DeploymentMigrationNote
}

// PendingOf is the Pending for an approval of a deployment.
func PendingOf(a *store.Approval, d *store.Deployment) Pending {
	p := Pending{
		ApprovalID: a.ID, DeploymentID: a.DeploymentID, Kind: a.Kind, RequiredRole: a.RequiredRole,
		Required: a.Required, Reason: a.Reason, RequestedBy: a.RequestedBy, ExpiresAt: a.ExpiresAt,
	}
	if d != nil {
		p.Operator, p.Version, p.Strategy = d.OperatorName, d.Version, d.Strategy
		for _, c := range d.Clusters {
			p.Clusters = append(p.Clusters, c.ClusterName)
		}
	}
	return p
}

// URLs are the links a mail carries, built from the manager's public base URL.
type URLs struct {
	Approve    string // POST /api/v1/approvals/{id}/approve
	Reject     string // POST /api/v1/approvals/{id}/reject
	Deployment string // GET /api/v1/deployments/{id}
}

// LinksFor builds p's URLs under base ("https://slipway.example.com", a path prefix allowed).
func LinksFor(base string, p Pending) (URLs, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return URLs{}, invalid.Field("notify.baseURL", "%q is not an http(s) URL", base)
	}
	u.RawQuery, u.Fragment = "", ""
	root := strings.TrimSuffix(u.String(), "/")
	// Ids are escaped as one path segment each: a "/" in one cannot reach another route.
	return URLs{
		Approve:    root + "/api/v1/approvals/" + url.PathEscape(p.ApprovalID) + "/approve",
		Reject:     root + "/api/v1/approvals/" + url.PathEscape(p.ApprovalID) + "/reject",
		Deployment: root + "/api/v1/deployments/" + url.PathEscape(p.DeploymentID),
	}, nil
}

// indent indents every line of a migration note's markdown by four spaces, under its bullet.
func indent(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n")
}

var bodyTemplate = template.Must(template.New("pending").Funcs(template.FuncMap{"indent": indent}).Parse(
	`{{.P.RequestedBy}} asked to deploy {{.P.Operator}} {{.P.Version}}{{with .P.Strategy}} ({{.}}){{end}}, and it waits for approval.

Why:          {{.P.Reason}}
Who decides:  {{.Approvers}}

Deployment:   {{.P.DeploymentID}}
Operator:     {{.P.Operator}}
Version:      {{.P.Version}}
Clusters:     {{.Clusters}}
Requested by: {{.P.RequestedBy}}
Approval:     {{.P.ApprovalID}} ({{.P.Kind}})
{{- if not .P.ExpiresAt.IsZero}}
Expires:      {{.Expires}} (an expired request is never executed){{end}}
{{- with .P.MigrationNotes}}

Migration notes for the CRDs this version changes:
{{- range .}}

* {{.CRDName}} as {{.Version}} ships it ({{.Digest}}):
{{- with .Note.URL}}
  Guide: {{.}}{{end}}
{{- with .Note.Text}}
{{indent .}}{{end}}
{{- end}}
{{- end}}

Approve: {{.URLs.Approve}}
Reject:  {{.URLs.Reject}}
Details: {{.URLs.Deployment}}

Approve and reject are API calls: POST with your bearer token and an optional comment, e.g.

  curl -X POST -H "Authorization: Bearer $TOKEN" -d '{"comment": "looks good"}' {{.URLs.Approve}}

Nobody may approve their own request.
--
Slipway operator manager
`))

// PendingMessage renders the mail about p for to, with links under baseURL.
func PendingMessage(p Pending, baseURL string, to []string, now time.Time) (Message, error) {
	urls, err := LinksFor(baseURL, p)
	if err != nil {
		return Message{}, err
	}
	approvers := p.RequiredRole
	if p.RequiredRole == "EnvironmentOwner:Production" {
		approvers += " or Admin"
	}
	if p.Required > 1 {
		approvers = fmt.Sprintf("%d different people with %s", p.Required, approvers)
	}
	clusters := strings.Join(p.Clusters, ", ")
	if clusters == "" {
		clusters = "-"
	}
	var body strings.Builder
	err = bodyTemplate.Execute(&body, map[string]any{
		"P": p, "URLs": urls, "Approvers": approvers, "Clusters": clusters,
		"Expires": p.ExpiresAt.UTC().Format(time.RFC3339),
	})
	if err != nil {
		return Message{}, err
	}
	return Message{
		To:      to,
		Subject: fmt.Sprintf("[slipway] Approval needed: %s %s (%s) by %s", p.Operator, p.Version, p.Kind, p.RequestedBy),
		Body:    body.String(),
		Headers: map[string]string{
			"X-Slipway-Approval-Id":   p.ApprovalID,
			"X-Slipway-Deployment-Id": p.DeploymentID,
		},
		Date: now,
	}, nil
}
