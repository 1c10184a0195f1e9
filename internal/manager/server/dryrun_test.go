package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// TestDeploymentDryRun: POST /deployments?dryRun=true against real clusters and a real chart
// repository answers 200 with the plan and stores nothing (no deployment, no event, no audit
// entry); the real POST then gets the same stages; bad requests get the real POST's answers.
func TestDeploymentDryRun(t *testing.T) {
	repo := charttest.ServeRepository(t, widgetCharts()...)
	forEngine(t, func(t *testing.T, engine string) { testDeploymentDryRun(t, engine, repo.URL) })
}

func testDeploymentDryRun(t *testing.T, engine, repoURL string) {
	b := setup(t, engine)
	f := fleet(t)
	admin, olga := b.admin(), b.token("olga", auth.Operator)
	for _, c := range []api.ClusterRequest{
		{Name: "dry-dev-1", Environment: "Dev", Kubeconfig: string(f.Servers[1].Kubeconfig)},
		{Name: "dry-dev-2", Environment: "Dev", Kubeconfig: string(f.Servers[2].Kubeconfig)},
		{Name: "dry-stage", Environment: "Staging", Kubeconfig: string(f.Servers[1].Kubeconfig)},
		{Name: "dry-prod", Environment: "Production", Kubeconfig: string(f.Servers[2].Kubeconfig)},
	} {
		expect(t, "register "+c.Name, b.do("POST", "/api/v1/clusters", admin, c), http.StatusCreated)
	}
	expect(t, "register the operator", b.do("POST", "/api/v1/operators", olga, api.OperatorRequest{Name: "dry-widgets",
		Namespace: "dry-widgets", Chart: api.ChartRef{Repository: repoURL, Name: "widget-operator"}}), http.StatusCreated)
	const body = `{"operator": "dry-widgets", "version": "1.1.0", "environments": ["Dev", "Staging", "Production"],
 "strategy": "Canary", "canaryConfig": {"initialPercentage": 10, "incrementPercentage": 20, "evaluationPeriod": "PT5M", "successThreshold": 95}}`

	before := b.stored(t)
	r := b.do("POST", "/api/v1/deployments?dryRun=true", olga, body)
	expect(t, "dry run", r, http.StatusOK)
	var plan api.DryRun
	r.json(t, &plan)
	if after := b.stored(t); after != before {
		t.Fatalf("the dry run stored something: %+v, then %+v", before, after)
	}
	if !plan.DryRun || plan.WouldFail != "" || plan.Strategy != "Canary" || len(plan.Stages) == 0 || len(plan.Clusters) != 4 {
		t.Fatalf("plan: %s", r.body)
	}
	for _, c := range plan.Clusters {
		if c.Problem != "" || c.RunsVersion || len(c.CRDs) != 1 || c.CRDs[0].Name != "widgets."+charttest.Group || c.CRDs[0].Status == "" {
			t.Errorf("cluster %+v", c)
		}
	}
	if !slices.ContainsFunc(plan.Approvals, func(a api.DryRunApproval) bool { return a.Kind == approvals.KindProduction }) {
		t.Errorf("approvals %+v: want a production approval", plan.Approvals)
	}

	// The real POST: the stages the dry run showed.
	r = b.do("POST", "/api/v1/deployments", olga, body)
	expect(t, "deploy", r, http.StatusAccepted)
	var d api.Deployment
	r.json(t, &d)
	last := 0
	for _, c := range d.Clusters {
		last = max(last, c.Stage)
		if c.Stage >= len(plan.Stages) || !slices.Contains(plan.Stages[c.Stage].Clusters, c.Name) {
			t.Errorf("cluster %s is in stage %d; the dry run planned %+v", c.Name, c.Stage, plan.Stages)
		}
	}
	if last != len(plan.Stages)-1 {
		t.Errorf("the deployment has %d stages, the dry run %d", last+1, len(plan.Stages))
	}

	// Bad requests: the real POST's answers, and still nothing stored by the dry runs.
	before = b.stored(t)
	for _, tc := range []struct{ name, body string }{
		{"percentage above 100", strings.Replace(body, `"initialPercentage": 10`, `"initialPercentage": 150`, 1)},
		{"unknown cluster", `{"operator": "dry-widgets", "version": "1.1.0", "clusters": ["dry-dev-1", "nowhere"], "strategy": "Direct"}`},
		{"unknown environment", `{"operator": "dry-widgets", "version": "1.1.0", "environments": ["QA"], "strategy": "Direct"}`},
		{"unknown field", `{"operator": "dry-widgets", "version": "1.1.0", "environments": ["Dev"], "strategy": "Direct", "speed": "fast"}`},
		{"unknown operator", `{"operator": "nobody", "version": "1.1.0", "environments": ["Dev"], "strategy": "Direct"}`},
		{"unknown version", `{"operator": "dry-widgets", "version": "9.9.9", "environments": ["Dev"], "strategy": "Direct"}`},
		{"BlueGreen where the operator does not run", `{"operator": "dry-widgets", "version": "1.1.0", "clusters": ["dry-prod"], "strategy": "BlueGreen"}`},
		{"malformed", `{"operator": `},
		{"active deployment on a cluster", `{"operator": "dry-widgets", "version": "1.0.0", "clusters": ["dry-dev-2"], "strategy": "Direct"}`},
	} {
		dry := b.do("POST", "/api/v1/deployments?dryRun=true", olga, tc.body)
		real := b.do("POST", "/api/v1/deployments", olga, tc.body)
		if dry.status != real.status || dry.status/100 != 4 {
			t.Errorf("%s: dry run %d, real %d", tc.name, dry.status, real.status)
			continue
		}
		de, re := dry.apiError(t), real.apiError(t)
		if de.Code != re.Code || de.Message != re.Message || de.Details["field"] != re.Details["field"] {
			t.Errorf("%s: dry run %s, real %s", tc.name, dry.body, real.body)
		}
	}
	after := b.stored(t)
	if after.deployments != before.deployments || after.audit != before.audit+9 {
		t.Errorf("after the refused requests: %+v, before %+v; want only the 9 real POSTs audited", after, before)
	}
	expectInvalid(t, "bad dryRun", b.do("POST", "/api/v1/deployments?dryRun=yes", olga, body), "dryRun")
	expect(t, "dry run as Viewer", b.do("POST", "/api/v1/deployments?dryRun=true", b.viewer(), body), http.StatusForbidden)
}

// storedRows counts deployments, their events and the audit log.
type storedRows struct{ deployments, events, audit int }

func (b *bundle) stored(t *testing.T) storedRows {
	t.Helper()
	var out storedRows
	list := b.listDeployments(t, "?limit=1000")
	out.deployments = len(list.Items)
	for _, d := range list.Items {
		var evs api.DeploymentEventList
		b.do("GET", "/api/v1/deployments/"+d.ID+"/events?limit=1000", b.viewer(), nil).json(t, &evs)
		out.events += len(evs.Items)
	}
	var audit api.AuditList
	b.do("GET", "/api/v1/audit?limit=1000", b.admin(), nil).json(t, &audit)
	out.audit = len(audit.Items)
	return out
}
