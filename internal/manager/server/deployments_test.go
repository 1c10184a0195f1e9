package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// addCluster registers a cluster in the store directly: the engine is not started in these
// tests, so nothing connects to it, and Submit needs only its name and environment.
func (b *bundle) addCluster(name string, env store.Environment) {
	b.t.Helper()
	if _, err := b.store.ClusterCreate(context.Background(), &store.ClusterCreateParams{
		ID: uuid.NewString(), Name: name, Environment: env, KubernetesVersion: "v1.31.0", Health: store.HealthHealthy,
		KubeconfigCiphertext: []byte("sealed"), KeyID: "test", Now: time.Now(),
	}); err != nil {
		b.t.Fatal(err)
	}
}

// addOperator registers an operator with chart versions in the store directly.
func (b *bundle) addOperator(name, namespace string, versions ...string) *store.Operator {
	b.t.Helper()
	ctx := context.Background()
	op, err := b.store.OperatorCreate(ctx, &store.OperatorCreateParams{ID: uuid.NewString(), Name: name, Namespace: namespace,
		ChartRepository: "https://charts.example.com", ChartName: name, Now: time.Now()})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, v := range versions {
		if _, err := b.store.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: v,
			Digest: "sha256:" + v, Now: time.Now()}); err != nil {
			b.t.Fatal(err)
		}
	}
	return op
}

// addLive records, as the engine leaves it, a Completed deployment that put operator's version
// on clusters as release in namespace: the live release a BlueGreen deployment switches from.
func (b *bundle) addLive(op *store.Operator, version, namespace, release string, clusters ...string) {
	b.t.Helper()
	d := &store.Deployment{OperatorID: op.ID, OperatorName: op.Name, Version: version, Strategy: "Direct",
		Status: store.DeploymentCompleted, Reason: "completed", RequestedBy: "setup", CreatedAt: time.Now().Add(-time.Hour)}
	for _, c := range clusters {
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: c, Environment: store.EnvironmentDev,
			Status: store.ClusterHealthy, HelmRevision: 1, Namespace: namespace, Release: release})
	}
	if _, err := b.store.DeploymentCreate(context.Background(), d); err != nil {
		b.t.Fatal(err)
	}
}

// fleetOf registers the clusters the deployment tests target: two Dev, one Staging, one Production.
func (b *bundle) fleetOf() {
	b.addCluster("dev-1", store.EnvironmentDev)
	b.addCluster("dev-2", store.EnvironmentDev)
	b.addCluster("stage-1", store.EnvironmentStaging)
	b.addCluster("prod-1", store.EnvironmentProduction)
}

// setStatus moves a deployment to status through the store, as the engine would.
func (b *bundle) setStatus(id string, status store.DeploymentStatus, fn func(d *store.Deployment)) {
	b.t.Helper()
	if _, err := b.store.DeploymentUpdate(context.Background(), id, func(d *store.Deployment) error {
		d.Status = status
		if fn != nil {
			fn(d)
		}
		return nil
	}); err != nil {
		b.t.Fatal(err)
	}
}

// The design's request bodies, one per strategy, exactly as written (the JSON a script sends).
var designBodies = map[string]string{
	"Canary": `{"operator": "canary-op", "version": "1.14.0",
 "environments": ["Dev", "Staging", "Production"],
 "values": {"replicaCount": 2}, "valuesByEnvironment": {"Production": {"replicaCount": 3}},
 "strategy": "Canary",
 "canaryConfig": {"initialPercentage": 10, "incrementPercentage": 20,
                  "evaluationPeriod": "PT5M", "successThreshold": 95}}`,
	"BlueGreen": `{"operator": "bg-op", "version": "1.14.0", "clusters": ["dev-1", "prod-1"],
 "strategy": "BlueGreen",
 "blueGreenConfig": {"blueNamespace": "bg-system", "greenNamespace": "bg-green", "validationPeriod": "PT5M", "autoSwitch": false}}`,
	"Rolling": `{"operator": "rolling-op", "version": "1.14.0", "clusters": ["dev-1", "stage-1", "prod-1"],
 "strategy": "Rolling",
 "rollingConfig": {"clusterOrder": ["stage-1", "dev-1", "prod-1"], "validationPeriod": "PT5M", "pauseBetweenClusters": "PT1M"}}`,
	"Direct": `{"operator": "direct-op", "version": "1.14.0", "environments": ["Dev"],
 "strategy": "Direct",
 "directConfig": {"parallelClusters": 2, "skipHealthChecks": false}}`,
}

// submitAll registers an operator per strategy and posts the design's body of each; it returns
// the deployments by strategy.
func (b *bundle) submitAll(token string) map[string]api.Deployment {
	b.t.Helper()
	out := map[string]api.Deployment{}
	for _, strategy := range []string{"Canary", "BlueGreen", "Rolling", "Direct"} {
		var req map[string]any
		if err := json.Unmarshal([]byte(designBodies[strategy]), &req); err != nil {
			b.t.Fatal(err)
		}
		op := b.addOperator(req["operator"].(string), req["operator"].(string)+"-system", "1.13.0", "1.14.0")
		if strategy == "BlueGreen" {
			// BlueGreen switches from the running version: 1.13.0 runs in blueNamespace.
			b.addLive(op, "1.13.0", "bg-system", "bg-op", "dev-1", "prod-1")
		}
		r := b.do("POST", "/api/v1/deployments", token, designBodies[strategy])
		expect(b.t, strategy, r, http.StatusAccepted)
		var d api.Deployment
		r.json(b.t, &d)
		out[strategy] = d
	}
	return out
}

func TestDeployments(t *testing.T) {
	forEngine(t, testDeployments)
}

func testDeployments(t *testing.T, engine string) {
	b := setup(t, engine)
	b.fleetOf()
	olga := b.token("olga", auth.Operator)
	admin := b.admin()
	deps := b.submitAll(olga)

	wantClusters := map[string][]string{
		"Canary":    {"dev-1", "dev-2", "stage-1", "prod-1"},
		"BlueGreen": {"dev-1", "prod-1"},
		"Rolling":   {"stage-1", "dev-1", "prod-1"},
		"Direct":    {"dev-1", "dev-2"},
	}
	for strategy, d := range deps {
		var req map[string]json.RawMessage
		if err := json.Unmarshal([]byte(designBodies[strategy]), &req); err != nil {
			t.Fatal(err)
		}
		configKey := strings.ToLower(strategy[:1]) + strategy[1:] + "Config"
		// The config as given: the same settings (a field at its zero value may be left out).
		if _, err := uuid.Parse(d.ID); err != nil || d.Status != string(store.DeploymentQueued) || d.Strategy != strategy ||
			d.Version != "1.14.0" || d.RequestedBy != "olga" || d.RequestID == "" || d.BakeWindow != "PT15M" {
			t.Errorf("%s: %+v", strategy, d)
		}
		if !configEqual(t, strategy, d.Config, req[configKey]) {
			t.Errorf("%s: config %s, want %s as given", strategy, d.Config, req[configKey])
		}
		var names []string
		for _, c := range d.Clusters {
			names = append(names, c.Name)
			if c.Status != string(store.ClusterPending) || c.Namespace == "" || c.Release == "" || c.Environment == "" {
				t.Errorf("%s: cluster %+v", strategy, c)
			}
		}
		slices.Sort(names)
		want := slices.Sorted(slices.Values(wantClusters[strategy]))
		if !slices.Equal(names, want) {
			t.Errorf("%s: clusters %v, want %v", strategy, names, want)
		}
		// GET answers the same deployment.
		var got api.Deployment
		r := b.do("GET", "/api/v1/deployments/"+d.ID, b.viewer(), nil)
		expect(t, "get "+strategy, r, http.StatusOK)
		r.json(t, &got)
		if got.ID != d.ID || len(got.Clusters) != len(d.Clusters) || !jsonEqual(t, got.Config, d.Config) {
			t.Errorf("%s: GET %+v, POST %+v", strategy, got, d)
		}
	}
	canary := deps["Canary"]
	if !jsonEqual(t, canary.Values, json.RawMessage(`{"replicaCount": 2}`)) ||
		!jsonEqual(t, canary.ValuesByEnvironment, json.RawMessage(`{"Production": {"replicaCount": 3}}`)) {
		t.Errorf("values %s by environment %s", canary.Values, canary.ValuesByEnvironment)
	}
	// Green goes to the configured namespace; blue is where the operator runs now, the body's
	// blueNamespace.
	for _, c := range deps["BlueGreen"].Clusters {
		if c.Namespace != "bg-green" || c.BlueNamespace != "bg-system" || c.BlueRelease != "bg-op" || c.Release == c.BlueRelease {
			t.Errorf("BlueGreen cluster %+v", c)
		}
	}

	// Bad input is 400 naming the JSON path, and stores nothing.
	before := len(b.listDeployments(t, "").Items)
	for _, tc := range []struct{ name, body, field string }{
		{"percentage above 100", strings.Replace(designBodies["Canary"], `"initialPercentage": 10`, `"initialPercentage": 150`, 1), "canaryConfig.initialPercentage"},
		{"negative percentage", strings.Replace(designBodies["Canary"], `"incrementPercentage": 20`, `"incrementPercentage": -5`, 1), "canaryConfig.incrementPercentage"},
		{"unparsable period", strings.Replace(designBodies["Canary"], `"PT5M"`, `"5 minutes"`, 1), "canaryConfig.evaluationPeriod"},
		{"unknown cluster in clusterOrder", strings.Replace(designBodies["Rolling"], `"clusterOrder": ["stage-1", "dev-1", "prod-1"]`, `"clusterOrder": ["nowhere", "dev-1"]`, 1), "rollingConfig.clusterOrder[0]"},
		{"unknown cluster", `{"operator": "direct-op", "version": "1.14.0", "clusters": ["dev-2", "nowhere"], "strategy": "Direct"}`, "clusters[1]"},
		{"unknown environment", `{"operator": "direct-op", "version": "1.14.0", "environments": ["QA"], "strategy": "Direct"}`, "environments[0]"},
		{"unknown field", `{"operator": "direct-op", "version": "1.14.0", "environments": ["Dev"], "strategy": "Direct", "speed": "fast"}`, "speed"},
		{"unknown config field", strings.Replace(designBodies["Direct"], `"parallelClusters": 2`, `"parallelClusters": 2, "turbo": true`, 1), "directConfig.turbo"},
		{"wrong type", `{"operator": "direct-op", "version": 1.14, "environments": ["Dev"], "strategy": "Direct"}`, "version"},
		{"unknown strategy", `{"operator": "direct-op", "version": "1.14.0", "environments": ["Dev"], "strategy": "BigBang"}`, "strategy"},
		{"unknown operator", `{"operator": "nobody", "version": "1.14.0", "environments": ["Dev"], "strategy": "Direct"}`, "operator"},
		{"unknown version", `{"operator": "direct-op", "version": "9.9.9", "environments": ["Dev"], "strategy": "Direct"}`, "version"},
		{"BlueGreen where the operator does not run", `{"operator": "direct-op", "version": "1.14.0", "clusters": ["prod-1", "dev-2"], "strategy": "BlueGreen"}`, "clusters[1]"},
		{"bake window over a day", `{"operator": "direct-op", "version": "1.14.0", "environments": ["Dev"], "strategy": "Direct", "bakeWindow": "P2D"}`, "bakeWindow"},
		{"malformed", `{"operator": `, ""},
		{"empty body", ``, ""},
	} {
		e := expectInvalid(t, tc.name, b.do("POST", "/api/v1/deployments", olga, tc.body), tc.field)
		if e.Code != api.CodeInvalid {
			t.Errorf("%s: code %q", tc.name, e.Code)
		}
	}
	if after := len(b.listDeployments(t, "").Items); after != before {
		t.Fatalf("rejected requests stored deployments: %d, then %d", before, after)
	}

	// One active deployment per operator and cluster: 409 naming the cluster and the deployment.
	r := b.do("POST", "/api/v1/deployments", olga, `{"operator": "direct-op", "version": "1.13.0", "clusters": ["dev-2"], "strategy": "Direct"}`)
	expect(t, "second active deployment", r, http.StatusConflict)
	if e := r.apiError(t); e.Code != api.CodeConflict || !strings.Contains(e.Message, `"dev-2"`) || !strings.Contains(e.Message, deps["Direct"].ID) {
		t.Fatalf("conflict: %s", r.body)
	}
	// Another cluster of the same operator is free; the request's bakeWindow is the deployment's.
	other := b.do("POST", "/api/v1/deployments", olga,
		`{"operator": "direct-op", "version": "1.13.0", "clusters": ["prod-1"], "strategy": "Direct", "bakeWindow": "PT5M"}`)
	expect(t, "same operator, another cluster", other, http.StatusAccepted)
	var baked api.Deployment
	other.json(t, &baked)
	if baked.BakeWindow != "PT5M" {
		t.Errorf("bakeWindow %q, want the request's PT5M", baked.BakeWindow)
	}

	// Lists, filters and pages.
	// Five requested, and the Completed one that left BlueGreen's blue.
	if n := len(b.listDeployments(t, "").Items); n != 6 {
		t.Fatalf("%d deployments, want 6", n)
	}
	if l := b.listDeployments(t, "?operator=canary-op"); len(l.Items) != 1 || l.Items[0].ID != canary.ID {
		t.Fatalf("operator filter: %+v", l)
	}
	if l := b.listDeployments(t, "?operator=nobody"); len(l.Items) != 0 {
		t.Fatalf("unknown operator: %+v", l)
	}
	if l := b.listDeployments(t, "?status=Queued&active=true"); len(l.Items) != 5 {
		t.Fatalf("Queued and active: %d", len(l.Items))
	}
	expectInvalid(t, "bad status", b.do("GET", "/api/v1/deployments?status=Running", olga, nil), "status")
	expectInvalid(t, "bad active", b.do("GET", "/api/v1/deployments?active=yes", olga, nil), "active")
	seen := map[string]bool{}
	page := b.listDeployments(t, "?limit=2")
	for pages := 1; ; pages++ {
		for _, d := range page.Items {
			if seen[d.ID] {
				t.Fatalf("%s on two pages", d.ID)
			}
			seen[d.ID] = true
		}
		if page.Continue == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page = b.listDeployments(t, "?limit=2&continue="+page.Continue)
	}
	if len(seen) != 6 {
		t.Fatalf("pages held %d deployments, want 6", len(seen))
	}

	// Unknown deployments.
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		for _, p := range []string{"", "/rollback-status", "/events"} {
			r := b.do("GET", "/api/v1/deployments/"+id+p, olga, nil)
			expect(t, "unknown "+id+p, r, http.StatusNotFound)
			if e := r.apiError(t); e.Details["kind"] != "deployment" {
				t.Errorf("%s: %s", id+p, r.body)
			}
		}
		expect(t, "cancel unknown", b.do("DELETE", "/api/v1/deployments/"+id, olga, nil), http.StatusNotFound)
		expect(t, "rollback unknown", b.do("POST", "/api/v1/deployments/"+id+"/rollback", admin, nil), http.StatusNotFound)
		expect(t, "switch unknown", b.do("POST", "/api/v1/deployments/"+id+"/switch", olga, nil), http.StatusNotFound)
	}

	// Cancel: 202 and cancelRequested; a finished deployment has nothing to cancel.
	var d api.Deployment
	r = b.do("DELETE", "/api/v1/deployments/"+deps["Rolling"].ID, olga, nil)
	expect(t, "cancel", r, http.StatusAccepted)
	if r.json(t, &d); !d.CancelRequested || d.ID != deps["Rolling"].ID {
		t.Fatalf("cancelled: %+v", d)
	}
	b.setStatus(deps["Direct"].ID, store.DeploymentCompleted, nil)
	r = b.do("DELETE", "/api/v1/deployments/"+deps["Direct"].ID, olga, nil)
	expect(t, "cancel a finished deployment", r, http.StatusConflict)
	if e := r.apiError(t); e.Code != api.CodeConflict || !strings.Contains(e.Message, "Completed") {
		t.Fatalf("cancel finished: %s", r.body)
	}

	// Rollback: Admin only, 202, once; rollback-status follows it.
	rs := b.rollbackStatus(t, canary.ID)
	if rs.Status != api.RollbackNotStarted || len(rs.Clusters) != 0 || rs.DeploymentID != canary.ID {
		t.Fatalf("before rollback: %+v", rs)
	}
	expect(t, "rollback as Operator", b.do("POST", "/api/v1/deployments/"+canary.ID+"/rollback", olga, nil), http.StatusForbidden)
	expectInvalid(t, "rollback unknown field", b.do("POST", "/api/v1/deployments/"+canary.ID+"/rollback", admin, `{"why": "x"}`), "why")
	r = b.do("POST", "/api/v1/deployments/"+canary.ID+"/rollback", admin, api.RollbackRequest{Reason: "errors in prod"})
	expect(t, "rollback", r, http.StatusAccepted)
	if r.json(t, &d); !d.RollbackRequested || !strings.Contains(d.RollbackReason, "errors in prod") {
		t.Fatalf("rollback: %+v", d)
	}
	expect(t, "second rollback", b.do("POST", "/api/v1/deployments/"+canary.ID+"/rollback", admin, nil), http.StatusConflict)
	rs = b.rollbackStatus(t, canary.ID)
	if rs.Status != api.RollbackInProgress || !strings.Contains(rs.Reason, "alice") || len(rs.Clusters) != 4 {
		t.Fatalf("rollback requested: %+v", rs)
	}
	// As the engine ends it: rolled back, with each cluster's way back.
	started := time.Now().Add(-12 * time.Second).UTC().Truncate(time.Millisecond)
	b.setStatus(canary.ID, store.DeploymentRolledBack, func(d *store.Deployment) {
		finished := started.Add(9 * time.Second)
		d.RollbackStartedAt, d.RollbackFinishedAt = &started, &finished
		for _, c := range d.Clusters {
			c.Status, c.PreviousVersion, c.PreviousRevision, c.Message = store.ClusterRolledBack, "1.13.0", 3, "rolled back to revision 3"
		}
	})
	rs = b.rollbackStatus(t, canary.ID)
	if rs.Status != api.RollbackRolledBack || rs.DurationSeconds == nil || *rs.DurationSeconds != 9 || len(rs.Clusters) != 4 {
		t.Fatalf("rolled back: %+v", rs)
	}
	for _, c := range rs.Clusters {
		if c.Status != string(store.ClusterRolledBack) || c.FromVersion != "1.14.0" || c.ToVersion != "1.13.0" || c.ToRevision != 3 || c.Message == "" {
			t.Errorf("rolled back cluster %+v", c)
		}
	}

	// Switch: only BlueGreen, once.
	r = b.do("POST", "/api/v1/deployments/"+deps["Rolling"].ID+"/switch", olga, nil)
	expect(t, "switch Rolling", r, http.StatusConflict)
	if e := r.apiError(t); !strings.Contains(e.Message, "BlueGreen") {
		t.Fatalf("switch Rolling: %s", r.body)
	}
	r = b.do("POST", "/api/v1/deployments/"+deps["BlueGreen"].ID+"/switch", olga, nil)
	expect(t, "switch BlueGreen", r, http.StatusAccepted)
	if r.json(t, &d); !d.SwitchRequested {
		t.Fatalf("switch: %+v", d)
	}
	expect(t, "second switch", b.do("POST", "/api/v1/deployments/"+deps["BlueGreen"].ID+"/switch", olga, nil), http.StatusConflict)

	// Every request is in the audit log.
	var audit api.AuditList
	b.do("GET", "/api/v1/audit?targetKind=deployment&limit=1000", admin, nil).json(t, &audit)
	count := map[string]int{}
	for _, e := range audit.Items {
		count[e.Action+"/"+e.Result]++
	}
	for key, n := range map[string]int{"deployment.create/success": 5, "deployment.create/invalid": 17, "deployment.cancel/success": 1,
		"deployment.cancel/invalid": 1, "deployment.rollback/success": 1, "deployment.rollback/invalid": 1, "deployment.switch/success": 1, "deployment.switch/invalid": 2} {
		if count[key] != n {
			t.Errorf("audit %s: %d, want %d (%v)", key, count[key], n, count)
		}
	}
}

func (b *bundle) listDeployments(t *testing.T, query string) api.DeploymentList {
	t.Helper()
	r := b.do("GET", "/api/v1/deployments"+query, b.viewer(), nil)
	expect(t, "list "+query, r, http.StatusOK)
	var l api.DeploymentList
	r.json(t, &l)
	return l
}

func (b *bundle) rollbackStatus(t *testing.T, id string) api.RollbackStatus {
	t.Helper()
	r := b.do("GET", "/api/v1/deployments/"+id+"/rollback-status", b.viewer(), nil)
	expect(t, "rollback-status", r, http.StatusOK)
	var rs api.RollbackStatus
	r.json(t, &rs)
	return rs
}

// configEqual compares two strategy configs by their settings.
func configEqual(t *testing.T, strategy string, a, b json.RawMessage) bool {
	t.Helper()
	ra, rb := &api.DeploymentRequest{Strategy: api.Strategy(strategy)}, &api.DeploymentRequest{Strategy: api.Strategy(strategy)}
	if err := ra.SetConfigJSON(a); err != nil {
		t.Fatal(err)
	}
	if err := rb.SetConfigJSON(b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(ra, rb)
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestDeploymentRateLimit checks the design's 10 deployments a minute per user on the route's key.
func TestDeploymentRateLimit(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine, withRules(ratelimit.DefaultRules()))
		olga, otto := b.token("olga", auth.Operator), b.token("otto", auth.Operator)
		for i := range 10 {
			expect(t, fmt.Sprintf("request %d", i+1), b.do("POST", "/api/v1/deployments", olga, "{}"), http.StatusBadRequest)
		}
		r := b.do("POST", "/api/v1/deployments", olga, "{}")
		expect(t, "11th request", r, http.StatusTooManyRequests)
		if e := r.apiError(t); e.Code != api.CodeRateLimited || r.header.Get("Retry-After") == "" {
			t.Fatalf("429: %s", r.body)
		}
		expect(t, "another user", b.do("POST", "/api/v1/deployments", otto, "{}"), http.StatusBadRequest)
	})
}
