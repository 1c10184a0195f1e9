package server

import (
	"net/http"

	"github.com/slipway-dev/slipway/internal/manager/auth"
)

// route is one endpoint: its pattern, who may call it, its request and response types (for the
// OpenAPI document) and its handler. Every route of the API is in routes(), and nowhere else.
type route struct {
	Method  string
	Pattern string
	Summary string
	// Action names the route in the audit log ("cluster.create").
	Action string
	// Public routes need no token; every other route needs one of Roles.
	Public bool
	Roles  []auth.Role
	// Request is a zero value of the body type (nil: no body); Response of the success body.
	Request  any
	Response any
	// Status is the success status (200 when zero).
	Status int
	Query  []queryParam
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
			Response: HealthResponse{}, Handle: s.getHealth},
		{Method: http.MethodGet, Pattern: "/api/v1/openapi.json", Roles: anyRole, Summary: "This API's OpenAPI 3 document",
			Response: map[string]any{}, Handle: s.getOpenAPI},

		{Method: http.MethodPost, Pattern: "/api/v1/operators", Roles: operatorRoles, Action: "operator.create",
			Summary: "Register an operator: its chart's versions are discovered and each version's CRDs stored",
			Request: OperatorRequest{}, Response: Operator{}, Status: http.StatusCreated, Handle: s.createOperator},
		{Method: http.MethodGet, Pattern: "/api/v1/operators", Roles: anyRole, Summary: "List operators",
			Response: OperatorList{}, Query: append([]queryParam{{Name: "namespace", Description: "only operators installed into this namespace"}}, pageParams...),
			Handle: s.listOperators},
		{Method: http.MethodGet, Pattern: "/api/v1/operators/{name}", Roles: anyRole, Summary: "Get an operator",
			Response: Operator{}, Handle: s.getOperator},

		{Method: http.MethodPost, Pattern: "/api/v1/clusters", Roles: admins, Action: "cluster.create",
			Summary: "Register a cluster: connectivity is checked, the Kubernetes version detected, the kubeconfig sealed",
			Request: ClusterRequest{}, Response: Cluster{}, Status: http.StatusCreated, Handle: s.createCluster},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters", Roles: anyRole, Summary: "List clusters",
			Response: ClusterList{}, Query: append([]queryParam{
				{Name: "environment", Enum: environmentEnum},
				{Name: "health", Enum: []string{"Unknown", "Healthy", "Unhealthy"}},
			}, pageParams...), Handle: s.listClusters},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters/{name}", Roles: anyRole, Summary: "Get a cluster",
			Response: Cluster{}, Handle: s.getCluster},
		{Method: http.MethodGet, Pattern: "/api/v1/clusters/{name}/health", Roles: anyRole, Action: "cluster.access",
			Summary:  "A cluster's last health check; refresh=true checks now",
			Response: ClusterHealth{}, Query: []queryParam{{Name: "refresh", Enum: []string{"true", "false"}}}, Handle: s.getClusterHealth},
		{Method: http.MethodDelete, Pattern: "/api/v1/clusters/{name}", Roles: admins, Action: "cluster.delete",
			Summary: "Remove a cluster and what the manager created in it", Status: http.StatusNoContent, Handle: s.deleteCluster},

		{Method: http.MethodPost, Pattern: "/api/v1/crds", Roles: operatorRoles, Action: "crd.create",
			Summary: "Record a revision of a CRD's definition (for CRDs that no registered chart ships)",
			Request: CRDRequest{}, Response: CRD{}, Status: http.StatusCreated, Handle: s.createCRD},
		{Method: http.MethodGet, Pattern: "/api/v1/crds", Roles: anyRole, Summary: "List CRDs with their latest revision",
			Response: CRDList{}, Query: append([]queryParam{{Name: "group", Description: "only CRDs of this API group"}}, pageParams...),
			Handle: s.listCRDs},
		{Method: http.MethodGet, Pattern: "/api/v1/crds/{name}", Roles: anyRole, Summary: "Get a CRD with its schema history and approvals",
			Response: CRD{}, Handle: s.getCRD},
		{Method: http.MethodPost, Pattern: "/api/v1/crds/{name}/validate", Roles: anyRole, Action: "crd.validate",
			Summary: "Compare a new definition with the stored one and check the clusters' existing objects against it",
			Request: ValidateRequest{}, Response: ValidationReport{}, Handle: s.validateCRD},
		{Method: http.MethodPost, Pattern: "/api/v1/crds/{name}/approve", Roles: admins, Action: "crd.approve",
			Summary: "Approve a breaking change of a CRD", Request: ApproveRequest{}, Response: Approval{},
			Status: http.StatusCreated, Handle: s.approveCRD},

		{Method: http.MethodGet, Pattern: "/api/v1/audit", Roles: admins, Summary: "Query the audit log, newest first",
			Response: AuditList{}, Query: append([]queryParam{
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
