//go:build e2e

package main_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestRemovedVersion_DeploymentKeepsItsHistory: "a version that disappeared from the source is
// marked, not deleted (deployments that used it keep their history)", through the built binary.
// 1.0.0 is deployed with Rolling on two clusters with workloads, then unpublished; the refresh
// marks it removed. The deployment still reads as it did (status, stages, clusters with their
// Helm revisions, every event), it is still listed under its operator, its CRD revision is still
// in GET /crds/{name} with 1.0.0 among the versions shipping it and readable by that version,
// every audit record written before is still there unchanged beside the refresh's, and 1.0.0
// cannot be deployed again.
func TestRemovedVersion_DeploymentKeepsItsHistory(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testRemovedVersionKeepsHistory(t, engine)
		})
	}
}

// removedSnapshot is what the API shows of the deployment of 1.0.0.
type removedSnapshot struct {
	dep    api.Deployment
	events []api.DeploymentEvent
	rev    api.CRDRevision
	audit  []api.AuditEvent
}

func testRemovedVersionKeepsHistory(t *testing.T, engine string) {
	servers := fleet(t, 2).Servers
	charts := benchCharts() // 1.0.0 and 1.0.1, with a CRD of the test's own
	crd := chartCRD(t, charts[0])
	repo := charttest.ServeRepository(t, charts...)
	p := newDeployment(t, engine).serve("--insecure-http", "--approval-environments=none")
	name, olga := uniqueName("widgets"), p.d.token("olga", auth.Operator)
	clusters := []string{uniqueName("dev"), uniqueName("dev")}
	for i, c := range clusters {
		registerCluster(t, p, c, "Dev", servers[i].Kubeconfig)
	}
	registerOperator(t, p, name, "ns-"+name, repo.URL)
	order := jsonList(clusters)
	dep := postDeployment(t, p, olga, `{"operator": "`+name+`", "version": "1.0.0", "clusters": `+order+`, "strategy": "Rolling",
		"rollingConfig": {"clusterOrder": `+order+`, "validationPeriod": "PT1S", "pauseBetweenClusters": "PT0S"}}`)
	waitDeployment(t, p, dep.ID, "Completed", 3*time.Minute)
	before := snapshotRemoved(t, p, dep.ID, crd)
	if len(before.dep.Clusters) != 2 || before.dep.Clusters[0].Stage == before.dep.Clusters[1].Stage {
		t.Fatalf("the Rolling deployment has no stage per cluster: %+v", before.dep.Clusters)
	}
	checkHistory(t, before.events, 2)

	repo.Remove(t, operatorChart, "1.0.0")
	var res api.OperatorRefreshResult
	if err := json.Unmarshal(p.must("POST", "/api/v1/operators/"+name+"/refresh", olga, nil, http.StatusOK).body, &res); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{"1.0.0"}) || !slices.Equal(res.Versions, []string{"1.0.1"}) {
		t.Fatalf("refresh after unpublishing 1.0.0: %+v", res)
	}
	op := getOperator(t, p, name)
	if len(op.RemovedVersions) != 1 || op.RemovedVersions[0].Version != "1.0.0" || op.RemovedVersions[0].Reason != store.VersionRemovedFromSource {
		t.Fatalf("operator after the refresh: %+v", op)
	}

	after := snapshotRemoved(t, p, dep.ID, crd)
	checkSameDeployment(t, before, after)
	checkAuditKept(t, before.audit, after.audit, name)
	var list api.DeploymentList
	if err := json.Unmarshal(p.must("GET", "/api/v1/deployments?operator="+name, p.d.admin(), nil, http.StatusOK).body, &list); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(deploymentIDs(list), dep.ID) {
		t.Fatalf("the deployment of the removed version is not listed under %s: %v", name, deploymentIDs(list))
	}
	r := p.must("POST", "/api/v1/deployments", olga, []byte(direct(name, "1.0.0", clusters[:1])), http.StatusBadRequest)
	if !strings.Contains(string(r.body), "removed") {
		t.Fatalf("deploying the removed version: %s", r.body)
	}
}

// chartCRD is the name of the one CRD a benchCharts chart ships.
func chartCRD(t *testing.T, files charttest.ChartFiles) string {
	t.Helper()
	for path := range files {
		if file, ok := strings.CutPrefix(path, "crds/"); ok {
			return strings.TrimSuffix(file, ".yaml") + "s." + charttest.Group
		}
	}
	t.Fatal("the chart ships no CRD")
	return ""
}

// snapshotRemoved reads the deployment, its events, the revision of crd 1.0.0 ships (from
// GET /crds/{name}, and by version) and the whole audit log.
func snapshotRemoved(t *testing.T, p *proc, id, crd string) removedSnapshot {
	t.Helper()
	s := removedSnapshot{dep: getDeployment(t, p, id), events: deploymentEvents(t, p, id)}
	var got api.CRD
	if err := json.Unmarshal(p.must("GET", "/api/v1/crds/"+crd, p.d.admin(), nil, http.StatusOK).body, &got); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(got.Revisions, func(r api.CRDRevision) bool { return slices.Contains(r.Versions, "1.0.0") })
	if i < 0 {
		t.Fatalf("GET /crds/%s has no revision that 1.0.0 ships: %+v", crd, got.Revisions)
	}
	s.rev = got.Revisions[i]
	var def api.CRDRevisionDefinition
	if err := json.Unmarshal(p.must("GET", "/api/v1/crds/"+crd+"/revisions/1.0.0", p.d.admin(), nil, http.StatusOK).body, &def); err != nil {
		t.Fatal(err)
	}
	if def.Revision.Digest != s.rev.Digest || len(def.Definition) == 0 {
		t.Fatalf("GET /crds/%s/revisions/1.0.0: digest %s, want %s", crd, def.Revision.Digest, s.rev.Digest)
	}
	var audit api.AuditList
	if err := json.Unmarshal(p.must("GET", "/api/v1/audit?limit=1000", p.d.admin(), nil, http.StatusOK).body, &audit); err != nil {
		t.Fatal(err)
	}
	s.audit = audit.Items
	return s
}

// checkSameDeployment: the deployment, its clusters and stages, its events and its CRD revision
// read as before the version was removed (events only added after them).
func checkSameDeployment(t *testing.T, before, after removedSnapshot) {
	t.Helper()
	b, a := before.dep, after.dep
	if a.Status != "Completed" || a.Version != b.Version || a.Stage != b.Stage || a.Strategy != b.Strategy ||
		!a.CreatedAt.Equal(b.CreatedAt) || a.FinishedAt == nil || !a.FinishedAt.Equal(*b.FinishedAt) || len(a.Clusters) != len(b.Clusters) {
		t.Fatalf("the deployment changed: %+v, was %+v", a, b)
	}
	for i, c := range a.Clusters {
		w := b.Clusters[i]
		if c.Name != w.Name || c.Stage != w.Stage || c.Status != w.Status || c.HelmRevision != w.HelmRevision ||
			c.Release != w.Release || c.Namespace != w.Namespace || c.HelmRevision == 0 {
			t.Errorf("cluster %d: %+v, was %+v", i, c, w)
		}
	}
	if len(after.events) < len(before.events) {
		t.Fatalf("%d events, were %d", len(after.events), len(before.events))
	}
	for i, e := range before.events {
		if g := after.events[i]; g.ID != e.ID || g.Type != e.Type || g.Cluster != e.Cluster || g.Message != e.Message || !g.Time.Equal(e.Time) {
			t.Errorf("event %d: %+v, was %+v", i, g, e)
		}
	}
	if r := after.rev; r.Digest != before.rev.Digest || r.Version != before.rev.Version || !slices.Equal(r.Versions, before.rev.Versions) {
		t.Errorf("the CRD revision 1.0.0 ships: %+v, was %+v", r, before.rev)
	}
}

// checkAuditKept: every audit record of before is in after, unchanged, and the refresh that
// removed 1.0.0 is recorded with what it removed.
func checkAuditKept(t *testing.T, before, after []api.AuditEvent, operator string) {
	t.Helper()
	byID := map[int64]api.AuditEvent{}
	for _, e := range after {
		byID[e.ID] = e
	}
	created := false
	for _, e := range before {
		g, ok := byID[e.ID]
		if !ok || g.Action != e.Action || g.Result != e.Result || g.Actor != e.Actor || g.TargetName != e.TargetName || !g.Time.Equal(e.Time) {
			t.Errorf("audit record %d: %+v, was %+v", e.ID, g, e)
		}
		created = created || e.Action == "deployment.create" && e.Result == "success"
	}
	if !created {
		t.Errorf("no deployment.create record in the audit log: %+v", before)
	}
	refreshed := slices.ContainsFunc(after, func(e api.AuditEvent) bool {
		removed, _ := json.Marshal(e.Details["removed"])
		return e.Action == "operator.refresh" && e.Result == "success" && e.TargetName == operator && string(removed) == `["1.0.0"]`
	})
	if !refreshed {
		t.Errorf("no audit record of the refresh that removed 1.0.0: %+v", after)
	}
}
