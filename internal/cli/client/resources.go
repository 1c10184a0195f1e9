package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// One method per route the CLI uses. Lists take a limit (0: every item) and return the continue
// token left ("" when the list is complete).

// Page is a list's paging: Limit items at most (0: all).
type Page struct{ Limit int }

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func esc(s string) string { return url.PathEscape(s) }

// WhoAmI is who the token is.
func (c *Client) WhoAmI(ctx context.Context) (*WhoAmI, error) {
	var out WhoAmI
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/whoami", nil, nil, &out)
}

// UIConfig is the manager's public sign-in settings.
func (c *Client) UIConfig(ctx context.Context) (*UIConfig, error) {
	var out UIConfig
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/ui/config", nil, nil, &out)
}

// SignOut revokes the client's token on the manager (DELETE /api/v1/session): from then on no
// replica accepts it. A token without an id (jti) cannot be revoked: an *APIError with 409.
func (c *Client) SignOut(ctx context.Context) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/session", nil, nil, nil)
}

// ClusterFilter narrows a cluster list.
type ClusterFilter struct{ Environment, Health string }

func (c *Client) ListClusters(ctx context.Context, f ClusterFilter, p Page) ([]api.Cluster, string, error) {
	q := url.Values{}
	setIf(q, "environment", f.Environment)
	setIf(q, "health", f.Health)
	return list(ctx, c, "/api/v1/clusters", q, p.Limit, func(l *api.ClusterList) ([]api.Cluster, string) { return l.Items, l.Continue })
}

func (c *Client) GetCluster(ctx context.Context, name string) (*api.Cluster, error) {
	var out api.Cluster
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/clusters/"+esc(name), nil, nil, &out)
}

func (c *Client) ClusterHealth(ctx context.Context, name string, refresh bool) (*api.ClusterHealth, error) {
	q := url.Values{}
	if refresh {
		q.Set("refresh", "true")
	}
	var out api.ClusterHealth
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/clusters/"+esc(name)+"/health", q, nil, &out)
}

func (c *Client) CreateCluster(ctx context.Context, req api.ClusterRequest) (*api.Cluster, error) {
	var out api.Cluster
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/clusters", nil, req, &out)
}

func (c *Client) DeleteCluster(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/clusters/"+esc(name), nil, nil, nil)
}

func (c *Client) ListOperators(ctx context.Context, namespace string, p Page) ([]api.Operator, string, error) {
	q := url.Values{}
	setIf(q, "namespace", namespace)
	return list(ctx, c, "/api/v1/operators", q, p.Limit, func(l *api.OperatorList) ([]api.Operator, string) { return l.Items, l.Continue })
}

func (c *Client) GetOperator(ctx context.Context, name string) (*api.Operator, error) {
	var out api.Operator
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/operators/"+esc(name), nil, nil, &out)
}

func (c *Client) CreateOperator(ctx context.Context, req api.OperatorRequest) (*api.Operator, error) {
	var out api.Operator
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/operators", nil, req, &out)
}

func (c *Client) RefreshOperator(ctx context.Context, name string, req *api.RefreshRequest) (*api.OperatorRefreshResult, error) {
	var out api.OperatorRefreshResult
	var body any
	if req != nil {
		body = req
	}
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/operators/"+esc(name)+"/refresh", nil, body, &out)
}

func (c *Client) DeleteOperator(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/operators/"+esc(name), nil, nil, nil)
}

func (c *Client) ListCRDs(ctx context.Context, group string, p Page) ([]api.CRDSummary, string, error) {
	q := url.Values{}
	setIf(q, "group", group)
	return list(ctx, c, "/api/v1/crds", q, p.Limit, func(l *api.CRDList) ([]api.CRDSummary, string) { return l.Items, l.Continue })
}

func (c *Client) GetCRD(ctx context.Context, name string) (*api.CRD, error) {
	var out api.CRD
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/crds/"+esc(name), nil, nil, &out)
}

func (c *Client) ValidateCRD(ctx context.Context, name string, req api.ValidateRequest) (*api.ValidationReport, error) {
	var out api.ValidationReport
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/crds/"+esc(name)+"/validate", nil, req, &out)
}

func (c *Client) ApproveCRD(ctx context.Context, name string, req api.ApproveRequest) (*api.Approval, error) {
	var out api.Approval
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/crds/"+esc(name)+"/approve", nil, req, &out)
}

// CreateDeployment submits a deployment (202: stored Queued).
func (c *Client) CreateDeployment(ctx context.Context, req *api.DeploymentRequest) (*api.Deployment, error) {
	var out api.Deployment
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/deployments", nil, req, &out)
}

// DryRun plans a deployment and stores nothing.
func (c *Client) DryRun(ctx context.Context, req *api.DeploymentRequest) (*api.DryRun, error) {
	var out api.DryRun
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/deployments", url.Values{"dryRun": {"true"}}, req, &out)
}

// DeploymentFilter narrows a deployment list.
type DeploymentFilter struct {
	Operator, Status string
	Active           bool
}

func (c *Client) ListDeployments(ctx context.Context, f DeploymentFilter, p Page) ([]api.Deployment, string, error) {
	q := url.Values{}
	setIf(q, "operator", f.Operator)
	setIf(q, "status", f.Status)
	if f.Active {
		q.Set("active", "true")
	}
	return list(ctx, c, "/api/v1/deployments", q, p.Limit, func(l *api.DeploymentList) ([]api.Deployment, string) { return l.Items, l.Continue })
}

func (c *Client) GetDeployment(ctx context.Context, id string) (*api.Deployment, error) {
	var out api.Deployment
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/deployments/"+esc(id), nil, nil, &out)
}

func (c *Client) deploymentAction(ctx context.Context, method, id, action string, body any) (*api.Deployment, error) {
	var out api.Deployment
	path := "/api/v1/deployments/" + esc(id)
	if action != "" {
		path += "/" + action
	}
	return &out, c.Do(ctx, method, path, nil, body, &out)
}

func (c *Client) CancelDeployment(ctx context.Context, id string) (*api.Deployment, error) {
	return c.deploymentAction(ctx, http.MethodDelete, id, "", nil)
}

func (c *Client) PauseDeployment(ctx context.Context, id, reason string) (*api.Deployment, error) {
	return c.deploymentAction(ctx, http.MethodPost, id, "pause", api.PauseRequest{Reason: reason})
}

func (c *Client) ResumeDeployment(ctx context.Context, id string) (*api.Deployment, error) {
	return c.deploymentAction(ctx, http.MethodPost, id, "resume", nil)
}

func (c *Client) SwitchDeployment(ctx context.Context, id string) (*api.Deployment, error) {
	return c.deploymentAction(ctx, http.MethodPost, id, "switch", nil)
}

func (c *Client) RollbackDeployment(ctx context.Context, id, reason string) (*api.Deployment, error) {
	return c.deploymentAction(ctx, http.MethodPost, id, "rollback", api.RollbackRequest{Reason: reason})
}

func (c *Client) RollbackStatus(ctx context.Context, id string) (*api.RollbackStatus, error) {
	var out api.RollbackStatus
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/deployments/"+esc(id)+"/rollback-status", nil, nil, &out)
}

// DeploymentEvents lists a deployment's events after the event id after (0: from the start).
func (c *Client) DeploymentEvents(ctx context.Context, id string, after int64, p Page) ([]api.DeploymentEvent, string, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	return list(ctx, c, "/api/v1/deployments/"+esc(id)+"/events", q, p.Limit,
		func(l *api.DeploymentEventList) ([]api.DeploymentEvent, string) { return l.Items, l.Continue })
}

// EventStream opens the deployment's live event stream (Server-Sent Events) after the event id
// lastEventID (0: from the start); the caller reads and closes the body.
func (c *Client) EventStream(ctx context.Context, id string, lastEventID int64) (*http.Response, error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	if lastEventID > 0 {
		h.Set("Last-Event-ID", strconv.FormatInt(lastEventID, 10))
	}
	return c.Send(ctx, http.MethodGet, "/api/v1/deployments/"+esc(id)+"/events", nil, nil, h)
}

// ApprovalFilter narrows an approval list (Status "" is the server's default, pending).
type ApprovalFilter struct{ Status, DeploymentID string }

func (c *Client) ListApprovals(ctx context.Context, f ApprovalFilter, p Page) ([]api.DeploymentApproval, string, error) {
	q := url.Values{}
	setIf(q, "status", f.Status)
	setIf(q, "deploymentId", f.DeploymentID)
	return list(ctx, c, "/api/v1/approvals", q, p.Limit, func(l *api.ApprovalList) ([]api.DeploymentApproval, string) { return l.Items, l.Continue })
}

func (c *Client) decide(ctx context.Context, id, decision, comment string) (*api.DeploymentApproval, error) {
	var out api.DeploymentApproval
	return &out, c.Do(ctx, http.MethodPost, "/api/v1/approvals/"+esc(id)+"/"+decision, nil, api.DecisionRequest{Comment: comment}, &out)
}

func (c *Client) Approve(ctx context.Context, id, comment string) (*api.DeploymentApproval, error) {
	return c.decide(ctx, id, "approve", comment)
}

func (c *Client) Reject(ctx context.Context, id, comment string) (*api.DeploymentApproval, error) {
	return c.decide(ctx, id, "reject", comment)
}

// AuditFilter narrows the audit log (Since: RFC 3339).
type AuditFilter struct{ Actor, Action, TargetKind, TargetName, Since string }

func (c *Client) ListAudit(ctx context.Context, f AuditFilter, p Page) ([]api.AuditEvent, string, error) {
	q := url.Values{}
	setIf(q, "actor", f.Actor)
	setIf(q, "action", f.Action)
	setIf(q, "targetKind", f.TargetKind)
	setIf(q, "targetName", f.TargetName)
	setIf(q, "since", f.Since)
	return list(ctx, c, "/api/v1/audit", q, p.Limit, func(l *api.AuditList) ([]api.AuditEvent, string) { return l.Items, l.Continue })
}

func (c *Client) ListAnalysisTemplates(ctx context.Context, p Page) ([]api.AnalysisTemplate, string, error) {
	return list(ctx, c, "/api/v1/analysis-templates", url.Values{}, p.Limit, func(l *api.AnalysisTemplateList) ([]api.AnalysisTemplate, string) {
		return l.Items, l.Continue
	})
}

func (c *Client) GetAnalysisTemplate(ctx context.Context, name string) (*api.AnalysisTemplate, error) {
	var out api.AnalysisTemplate
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/analysis-templates/"+esc(name), nil, nil, &out)
}

// PutAnalysisTemplate creates the template (create) or replaces the one of its name.
func (c *Client) PutAnalysisTemplate(ctx context.Context, t json.RawMessage, name string, create bool) (*api.AnalysisTemplate, error) {
	var out api.AnalysisTemplate
	if create {
		return &out, c.Do(ctx, http.MethodPost, "/api/v1/analysis-templates", nil, t, &out)
	}
	return &out, c.Do(ctx, http.MethodPut, "/api/v1/analysis-templates/"+esc(name), nil, t, &out)
}

func (c *Client) DeleteAnalysisTemplate(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/analysis-templates/"+esc(name), nil, nil, nil)
}

func (c *Client) SetClusterPrometheus(ctx context.Context, cluster string, req api.PrometheusRequest) (*api.Prometheus, error) {
	var out api.Prometheus
	return &out, c.Do(ctx, http.MethodPut, "/api/v1/clusters/"+esc(cluster)+"/prometheus", nil, req, &out)
}

func (c *Client) GetClusterPrometheus(ctx context.Context, cluster string) (*api.Prometheus, error) {
	var out api.Prometheus
	return &out, c.Do(ctx, http.MethodGet, "/api/v1/clusters/"+esc(cluster)+"/prometheus", nil, nil, &out)
}

func (c *Client) DeleteClusterPrometheus(ctx context.Context, cluster string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/clusters/"+esc(cluster)+"/prometheus", nil, nil, nil)
}
