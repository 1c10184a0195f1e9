package server

import (
	"net/http"
	"slices"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
)

// route is one endpoint: its pattern, who may call it, its request and response types (for the
// OpenAPI document) and its handler. Every route of the API is in routes(), and nowhere else.
type route struct {
	Method  string
	Pattern string
	Summary string
	// Action names the route in the audit log ("cluster.create").
	Action string
	// Public routes need no token; every other route needs one of Roles, or with AnyCaller only
	// a token the manager accepts, with or without a role (sign-out).
	Public    bool
	Roles     []auth.Role
	AnyCaller bool
	// Request is a zero value of the body type (nil: no body); Response of the success body.
	Request  any
	Response any
	// BodyOptional: the request body may be left out.
	BodyOptional bool
	// Status is the success status (200 when zero).
	Status int
	// AlsoOK is a zero value of a second success body, answered 200 (a dry run's plan).
	AlsoOK any
	Query  []queryParam
	// Conflict documents a 409: the state of what the route changes can refuse it.
	Conflict bool
	// Stream: the handler may answer with a stream (Server-Sent Events) that outlives the request
	// timeout; it applies the timeout itself to what it does not stream.
	Stream bool
	// ClientLimit: a public route limited per client address (Server.limitClient).
	ClientLimit bool
	// Errors are error answers the route gives beyond those errorStatuses derives.
	Errors []int
	Handle func(w http.ResponseWriter, r *http.Request) error
}

type queryParam struct {
	Name, Description string
	Enum              []string
}

var (
	anyRole       = []auth.Role{auth.Admin, auth.Operator, auth.Viewer, auth.EnvironmentOwner}
	operatorRoles = []auth.Role{auth.Operator, auth.Admin}
	admins        = []auth.Role{auth.Admin}
)

var (
	pageParams = []queryParam{
		{Name: "limit", Description: "page size, 1-1000 (default 100)"},
		{Name: "continue", Description: "the continue token of the previous page"},
	}
	environmentEnum = []string{"Dev", "Staging", "Production"}
)

func (s *Server) routes() []route {
	return []route{
		{Method: http.MethodGet, Pattern: "/health", Public: true, Summary: "Service and database liveness",
			Response: api.HealthResponse{}, Handle: s.getHealth},
		{Method: http.MethodGet, Pattern: "/api/v1/openapi.json", Roles: anyRole, Summary: "This API's OpenAPI 3 document",
			Response: map[string]any{}, Handle: s.getOpenAPI},

		{Method: http.MethodPost, Pattern: "/api/v1/operators", Roles: operatorRoles, Action: "operator.create",
			Summary: "Register an operator: its chart's versions are discovered and each version's CRDs stored",
			Request: api.OperatorRequest{}, Response: api.Operator{}, Status: http.StatusCreated, Handle: s.createOperator},
		{Method: http.MethodGet, Pattern: "/api/v1/operators", Roles: anyRole, Summary: "List operators",
			Response: api.OperatorList{}, Query: append([]queryParam{{Name: "namespace", Description: "only operators installed into this namespace"}}, pageParams...),
			Handle: s.listOperators},
		{Method: http.MethodGet, Pattern: "/api/v1/operators/{name}", Roles: anyRole, Summary: "Get an operator",
			Response: api.Operator{}, Handle: s.getOperator},
		{Method: http.MethodPatch, Pattern: "/api/v1/operators/{name}", Roles: operatorRoles, Action: "operator.update",
			Summary: "Change an operator's chart source, version filter or migration notes: the new source is read, and each " +
				"new version's chart fetched, before anything is stored", Request: api.OperatorPatch{}, Response: api.Operator{},
			Conflict: true, Handle: s.updateOperator},
		{Method: http.MethodDelete, Pattern: "/api/v1/operators/{name}", Roles: admins, Action: "operator.delete",
			Summary: "Delete an operator (refused while it has active deployments); its deployments, audit records and " +
				"CRD revisions stay readable, its releases stay installed", Status: http.StatusNoContent, Conflict: true,
			Handle: s.deleteOperator},
		{Method: http.MethodPost, Pattern: "/api/v1/operators/{name}/refresh", Roles: operatorRoles, Action: "operator.refresh",
			Summary: "Re-read the operator's chart source now: new versions are stored with their CRDs, versions gone " +
				"are marked removed", Request: api.RefreshRequest{}, BodyOptional: true, Response: api.OperatorRefreshResult{},
			Conflict: true, Handle: s.refreshOperator},

		{Method: http.MethodPost, Pattern: "/api/v1/clusters", Roles: admins, Action: "cluster.create",
			Summary: "Register a cluster: connectivity is checked, the Kubernetes version detected, the kubeconfig sealed",
			Request: api.ClusterRequest{}, Response: api.Cluster{}, Status: http.StatusCreated, Handle: s.createCluster},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters", Roles: anyRole, Summary: "List clusters",
			Response: api.ClusterList{}, Query: append([]queryParam{
				{Name: "environment", Enum: environmentEnum},
				{Name: "health", Enum: []string{"Unknown", "Healthy", "Unhealthy"}},
			}, pageParams...), Handle: s.listClusters},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters/{name}", Roles: anyRole, Summary: "Get a cluster",
			Response: api.Cluster{}, Handle: s.getCluster},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters/{name}/health", Roles: anyRole, Action: "cluster.access",
			Summary:  "A cluster's last health check; refresh=true checks now",
			Response: api.ClusterHealth{}, Query: []queryParam{{Name: "refresh", Enum: []string{"true", "false"}}}, Handle: s.getClusterHealth},
		{Method: http.MethodDelete, Pattern: "/api/v1/clusters/{name}", Roles: admins, Action: "cluster.delete",
			Summary: "Remove a cluster and what the manager created in it", Status: http.StatusNoContent, Handle: s.deleteCluster},

		{Method: http.MethodPut, Pattern: "/api/v1/clusters/{name}/prometheus", Roles: admins, Action: "cluster.prometheus.set",
			Summary: "Set the Prometheus the cluster's analyses ask (checked with a query first); the token or password is " +
				"sealed and never shown", Request: api.PrometheusRequest{}, Response: api.Prometheus{}, Handle: s.setClusterPrometheus},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters/{name}/prometheus", Roles: anyRole,
			Summary:  "The cluster's Prometheus: URL, auth kind and whether a CA is set (never a secret)",
			Response: api.Prometheus{}, Handle: s.getClusterPrometheus},
		{Method: http.MethodDelete, Pattern: "/api/v1/clusters/{name}/prometheus", Roles: admins, Action: "cluster.prometheus.delete",
			Summary: "Remove the cluster's Prometheus: deployments with analyses on it are refused from then on",
			Status:  http.StatusNoContent, Handle: s.deleteClusterPrometheus},

		{Method: http.MethodPost, Pattern: "/api/v1/analysis-templates", Roles: admins, Action: "analysistemplate.create",
			Summary: "Store an analysis template: a PromQL query with a success condition, interval, count, limits and args; " +
				"the query's syntax is checked", Request: api.Analysis{}, Response: api.AnalysisTemplate{},
			Status: http.StatusCreated, Handle: s.createAnalysisTemplate},
		{Method: http.MethodGet, Pattern: "/api/v1/analysis-templates", Roles: anyRole, Summary: "List analysis templates by name",
			Response: api.AnalysisTemplateList{}, Query: pageParams, Handle: s.listAnalysisTemplates},
		{Method: http.MethodGet, Pattern: "/api/v1/analysis-templates/{name}", Roles: anyRole, Summary: "Get an analysis template",
			Response: api.AnalysisTemplate{}, Handle: s.getAnalysisTemplate},
		{Method: http.MethodPut, Pattern: "/api/v1/analysis-templates/{name}", Roles: admins, Action: "analysistemplate.update",
			Summary: "Replace an analysis template; deployments keep the copy they were created with",
			Request: api.Analysis{}, Response: api.AnalysisTemplate{}, Handle: s.updateAnalysisTemplate},
		{Method: http.MethodDelete, Pattern: "/api/v1/analysis-templates/{name}", Roles: admins, Action: "analysistemplate.delete",
			Summary: "Delete an analysis template; deployments keep the copy they were created with",
			Status:  http.StatusNoContent, Handle: s.deleteAnalysisTemplate},

		{Method: http.MethodPost, Pattern: "/api/v1/crds", Roles: operatorRoles, Action: "crd.create",
			Summary: "Record a revision of a CRD's definition (for CRDs that no registered chart ships)",
			Request: api.CRDRequest{}, Response: api.CRD{}, Status: http.StatusCreated, Handle: s.createCRD},
		{Method: http.MethodGet, Pattern: "/api/v1/crds", Roles: anyRole, Summary: "List CRDs with their latest revision",
			Response: api.CRDList{}, Query: append([]queryParam{{Name: "group", Description: "only CRDs of this API group"}}, pageParams...),
			Handle: s.listCRDs},
		{Method: http.MethodGet, Pattern: "/api/v1/crds/{name}", Roles: anyRole, Summary: "Get a CRD with its schema history and approvals",
			Response: api.CRD{}, Handle: s.getCRD},
		{Method: http.MethodPost, Pattern: "/api/v1/crds/{name}/validate", Roles: anyRole, Action: "crd.validate",
			Summary: "Compare a new definition with the stored one and check the clusters' existing objects against it",
			Request: api.ValidateRequest{}, Response: api.ValidationReport{}, Handle: s.validateCRD},
		{Method: http.MethodPost, Pattern: "/api/v1/crds/{name}/approve", Roles: admins, Action: "crd.approve",
			Summary: "Approve a breaking change of a CRD", Request: api.ApproveRequest{}, Response: api.Approval{},
			Status: http.StatusCreated, Handle: s.approveCRD},

		{Method: http.MethodPost, Pattern: "/api/v1/deployments", Roles: operatorRoles, Action: "deployment.create",
			Summary: "Deploy an operator version to clusters with a strategy: validated, stored Queued and run by the engine; " +
				"with dryRun=true validated and planned the same way, answered 200 with the plan, and nothing stored",
			Request: api.DeploymentRequest{}, Response: api.Deployment{}, Status: http.StatusAccepted, Conflict: true,
			Query: []queryParam{{Name: "dryRun", Enum: []string{"true", "false"},
				Description: "true: answer 200 with the plan (stages, approvals, CRD compatibility per cluster) and store nothing"}},
			AlsoOK: api.DryRun{}, Handle: s.createDeployment},
		{Method: http.MethodGet, Pattern: "/api/v1/deployments", Roles: anyRole, Summary: "List deployments, newest first",
			Response: api.DeploymentList{}, Query: append([]queryParam{
				{Name: "operator", Description: "only deployments of this operator"},
				{Name: "status", Enum: deploymentStatuses},
				{Name: "active", Enum: []string{"true", "false"}, Description: "true: only deployments that are not finished"},
			}, pageParams...), Handle: s.listDeployments},
		{Method: http.MethodGet, Pattern: "/api/v1/deployments/{id}", Roles: anyRole,
			Summary:  "Get a deployment with the status of each of its clusters",
			Response: api.Deployment{}, Handle: s.getDeployment},
		{Method: http.MethodDelete, Pattern: "/api/v1/deployments/{id}", Roles: operatorRoles, Action: "deployment.cancel",
			Summary:  "Cancel a deployment: installs in flight finish, no more start; its history is kept",
			Response: api.Deployment{}, Status: http.StatusAccepted, Conflict: true, Handle: s.cancelDeployment},
		{Method: http.MethodPost, Pattern: "/api/v1/deployments/{id}/rollback", Roles: admins, Action: "deployment.rollback",
			Summary: "Roll a deployment back to what each cluster ran before it (the body and its reason are optional)",
			Request: api.RollbackRequest{}, BodyOptional: true, Response: api.Deployment{}, Status: http.StatusAccepted, Conflict: true, Handle: s.rollbackDeployment},
		{Method: http.MethodGet, Pattern: "/api/v1/deployments/{id}/rollback-status", Roles: anyRole,
			Summary:  "A deployment's rollback: notStarted, inProgress, rolledBack or failed, per cluster",
			Response: api.RollbackStatus{}, Handle: s.getRollbackStatus},
		{Method: http.MethodPost, Pattern: "/api/v1/deployments/{id}/switch", Roles: operatorRoles, Action: "deployment.switch",
			Summary:  "Switch a BlueGreen deployment (autoSwitch false) to green once green is validated",
			Response: api.Deployment{}, Status: http.StatusAccepted, Conflict: true, Handle: s.switchDeployment},
		{Method: http.MethodPost, Pattern: "/api/v1/deployments/{id}/pause", Roles: operatorRoles, Action: "deployment.pause",
			Summary: "Pause a deployment: the cluster step under way finishes, no new one starts until resumed; health " +
				"checks and automatic rollback go on (the body and its reason are optional)",
			Request: api.PauseRequest{}, BodyOptional: true, Response: api.Deployment{}, Status: http.StatusAccepted, Conflict: true, Handle: s.pauseDeployment},
		{Method: http.MethodPost, Pattern: "/api/v1/deployments/{id}/resume", Roles: operatorRoles, Action: "deployment.resume",
			Summary:  "Resume a paused deployment from where it stopped",
			Response: api.Deployment{}, Status: http.StatusAccepted, Conflict: true, Handle: s.resumeDeployment},
		{Method: http.MethodGet, Pattern: "/api/v1/deployments/{id}/events", Roles: anyRole, Stream: true,
			Summary: "A deployment's step history, oldest first; with Accept: text/event-stream a live stream " +
				"(Server-Sent Events, resumed from Last-Event-ID, ending with the event end)",
			Response: api.DeploymentEventList{}, Query: append([]queryParam{
				{Name: "after", Description: "only events after this event id"},
			}, pageParams...), Handle: s.listDeploymentEvents},

		{Method: http.MethodGet, Pattern: "/api/v1/approvals", Roles: anyRole, Summary: "List approval requests, newest first",
			Response: api.ApprovalList{}, Query: append([]queryParam{
				{Name: "status", Enum: approvalStatuses, Description: "default pending"},
				{Name: "deploymentId", Description: "only the approvals of this deployment"},
			}, pageParams...), Handle: s.listApprovals},
		{Method: http.MethodPost, Pattern: "/api/v1/approvals/{id}/approve", Roles: anyRole, Action: "approval.approve",
			Summary: "Approve a request (the approval's role decides who may; nobody approves their own request)",
			Request: api.DecisionRequest{}, BodyOptional: true, Response: api.DeploymentApproval{}, Conflict: true, Handle: s.approveApproval},
		{Method: http.MethodPost, Pattern: "/api/v1/approvals/{id}/reject", Roles: anyRole, Action: "approval.reject",
			Summary: "Reject a request, with a comment saying why: the deployment is never executed",
			Request: api.DecisionRequest{}, Response: api.DeploymentApproval{}, Conflict: true, Handle: s.rejectApproval},

		{Method: http.MethodGet, Pattern: "/api/v1/operators/{name}/health", Roles: anyRole,
			Summary: "An operator's latest health on each cluster it runs on (overallHealth Unknown, no clusters, " +
				"before its first check)", Response: api.OperatorHealth{}, Handle: s.getOperatorHealth},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters/{cluster}/operators/{name}/health", Roles: anyRole,
			Summary: "An operator's latest health on one cluster: the design's cluster entry with operatorName " +
				"(404 before its first check there)", Response: api.ClusterOperatorHealth{}, Handle: s.getClusterOperatorHealth},

		{Method: http.MethodPost, Pattern: "/api/v1/notifications/channels", Roles: admins, Action: "notification.channel.create",
			Summary: "Add a notification channel (webhook, slack, smtp) with its routes; its secrets are sealed and never shown",
			Request: api.ChannelRequest{}, Response: api.Channel{}, Status: http.StatusCreated, Handle: s.createChannel},
		{Method: http.MethodGet, Pattern: "/api/v1/notifications/channels", Roles: admins, Summary: "List notification channels by name",
			Response: api.ChannelList{}, Query: pageParams, Handle: s.listChannels},
		{Method: http.MethodGet, Pattern: "/api/v1/notifications/channels/{name}", Roles: admins, Summary: "Get a notification channel",
			Response: api.Channel{}, Handle: s.getChannel},
		{Method: http.MethodPatch, Pattern: "/api/v1/notifications/channels/{name}", Roles: admins, Action: "notification.channel.update",
			Summary: "Change a channel's settings (a webhook's url or secret alone) or routes; the name and kind stay",
			Request: api.ChannelPatch{}, Response: api.Channel{}, Handle: s.updateChannel},
		{Method: http.MethodDelete, Pattern: "/api/v1/notifications/channels/{name}", Roles: admins, Action: "notification.channel.delete",
			Summary: "Remove a channel; its pending deliveries fail, its history stays", Status: http.StatusNoContent, Handle: s.deleteChannel},
		{Method: http.MethodPost, Pattern: "/api/v1/notifications/channels/{name}/test", Roles: admins, Action: "notification.channel.test",
			Summary:  "Send a test notification to the channel (delivered like any other: retried, listed)",
			Response: api.Notification{}, Status: http.StatusAccepted, Handle: s.testChannel},
		{Method: http.MethodGet, Pattern: "/api/v1/notifications", Roles: operatorRoles, Summary: "List notification deliveries, newest first, with their state, attempts and last error",
			Response: api.NotificationList{}, Query: append([]queryParam{
				{Name: "state", Enum: notificationStates},
				{Name: "channel", Description: "only deliveries to this channel"},
				{Name: "kind", Enum: append(slices.Clone(notifications.Kinds), notifications.KindTest)},
			}, pageParams...), Handle: s.listNotifications},
		{Method: http.MethodGet, Pattern: "/api/v1/notifications/{id}", Roles: operatorRoles, Summary: "Get a delivery with the payload it sends",
			Response: api.Notification{}, Handle: s.getNotification},

		// The web UI's (issue 20): who signs in and how, one fleet grid, and CRD schema diffs.
		{Method: http.MethodGet, Pattern: "/api/v1/whoami", Roles: anyRole, Summary: "The caller: subject, roles and the environments it owns",
			Response: api.Whoami{}, Handle: s.getWhoami},
		{Method: http.MethodGet, Pattern: "/api/v1/ui/config", Public: true,
			Summary:  "How the web UI signs in: the OIDC issuer, client id and scopes (absent without them), and whether sign-in links are exchanged",
			Response: api.UIConfigResponse{}, Handle: s.getUIConfig},
		{Method: http.MethodPost, Pattern: "/api/v1/session", Public: true, ClientLimit: true, Action: "session.create",
			Summary: "Exchange a one-time sign-in ticket (manager login-link) for a session token; a used, expired or forged ticket " +
				"is 401; 404 when the manager has no HS256 secret; limited per client address",
			Request: api.SessionRequest{}, Response: api.SessionResponse{}, Errors: []int{http.StatusUnauthorized, http.StatusNotFound},
			Handle: s.createSession},
		{Method: http.MethodDelete, Pattern: "/api/v1/session", Roles: anyRole, AnyCaller: true, Action: "session.delete",
			Summary: "Sign out: revoke the Bearer token of this request (a session token, a manager token, an ID token with a jti) " +
				"until it expires; every replica refuses it from then on (401). 409 for a token without an id (jti), which " +
				"cannot be revoked and stays valid until its exp",
			Status: http.StatusNoContent, Conflict: true, Handle: s.deleteSession},
		{Method: http.MethodGet, Pattern: "/api/v1/fleet", Roles: anyRole,
			Summary: "Every operator on every cluster in one answer: the version each runs, its drift from the operator's latest " +
				"and its last health check (a cell only where the operator runs)",
			Response: api.Fleet{}, Query: []queryParam{{Name: "environment", Enum: environmentEnum, Description: "only the clusters of this environment"}},
			Handle: s.getFleet},
		{Method: http.MethodGet, Pattern: "/api/v1/crds/{name}/revisions/{version}", Roles: anyRole,
			Summary:  "The stored definition of the CRD revision a version ships (an operator version, or a posted revision's label)",
			Response: api.CRDRevisionDefinition{}, Query: versionQuery, Handle: s.getCRDRevision},
		{Method: http.MethodGet, Pattern: "/api/v1/crds/{name}/diff", Roles: anyRole,
			Summary: "The changes between the CRD revisions two versions ship, each marked breaking or not by the checker " +
				"validate uses", Response: api.CRDDiff{}, Query: append([]queryParam{
				{Name: "from", Description: "the version to compare from (required)"},
				{Name: "to", Description: "the version to compare to (required)"},
			}, versionQuery...), Handle: s.getCRDDiff},

		{Method: http.MethodGet, Pattern: "/api/v1/audit", Roles: admins, Summary: "Query the audit log, newest first",
			Response: api.AuditList{}, Query: append([]queryParam{
				{Name: "actor"}, {Name: "action"}, {Name: "targetKind"}, {Name: "targetName"},
				{Name: "since", Description: "RFC 3339 time"},
			}, pageParams...), Handle: s.listAudit},
	}
}

// buildHandler registers every route on a ServeMux and wraps it.
func (s *Server) buildHandler() (http.Handler, error) {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.Method+" "+rt.Pattern, s.wrap(rt))
	}
	doc, err := s.buildOpenAPI()
	if err != nil {
		return nil, err
	}
	s.openapi = doc
	return s.outer(mux), nil
}
