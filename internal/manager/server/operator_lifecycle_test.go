package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestOperatorLifecycle: after registration an operator's versions are refreshed on demand (a
// version published later found with its CRDs, an unchanged index costing a 304, a version gone
// marked removed and refused at deployment), changed (PATCH: the filter, the source, validated
// before anything is stored) and deleted (DELETE: 409 naming active deployments, then the history
// stays readable and the operator can no longer change); all audited.
func TestOperatorLifecycle(t *testing.T) {
	forEngine(t, testOperatorLifecycle)
}

func testOperatorLifecycle(t *testing.T, engine string) {
	b := setup(t, engine)
	repo := charttest.ServeRepository(t, widgetCharts()[:2]...) // 1.0.0 and 1.1.0
	olga := b.token("olga", auth.Operator)
	reg := b.do("POST", "/api/v1/operators", olga, api.OperatorRequest{Name: "widgets", Namespace: "widget-system",
		Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}})
	expect(t, "register", reg, http.StatusCreated)
	var registered api.Operator
	reg.json(t, &registered)
	// Registration read the source whole: it is the first refresh, and the loop's next is an
	// interval (10m, ±10%) later, not at its next tick.
	if r := registered.Refresh; r == nil || r.CheckedAt.IsZero() || r.SucceededAt == nil || !r.SucceededAt.Equal(r.CheckedAt) || r.Error != "" ||
		r.NextAt.Sub(r.CheckedAt) < 9*time.Minute || r.NextAt.Sub(r.CheckedAt) > 11*time.Minute {
		t.Fatalf("refresh after registration: %+v, want one checked at the registration, the next an interval later", r)
	}
	requests := repo.Requests()
	if n := b.srv.refresh.Round(t.Context()); n != 0 || repo.Requests() != requests {
		t.Fatalf("a round right after the registration refreshed %d operators (%d requests to the source), want none due",
			n, repo.Requests()-requests)
	}

	// Refresh: nothing new yet, then a version published after registration.
	res := refreshOK(t, b, olga, "widgets", nil)
	if len(res.Added)+len(res.Removed) != 0 || !slices.Equal(res.Versions, []string{"1.1.0", "1.0.0"}) {
		t.Fatalf("refresh with nothing new: %+v", res)
	}
	repo.Add(t, widgetCharts()[2]) // 2.0.0
	res = refreshOK(t, b, olga, "widgets", nil)
	if res.NotModified || !slices.Equal(res.Added, []string{"2.0.0"}) || !slices.Equal(res.Versions, []string{"2.0.0", "1.1.0", "1.0.0"}) {
		t.Fatalf("refresh after publishing 2.0.0: %+v", res)
	}
	var crd api.CRD
	b.do("GET", "/api/v1/crds/widgets."+charttest.Group, b.viewer(), nil).json(t, &crd)
	var crdVersions []string
	for _, r := range crd.Revisions {
		crdVersions = append(crdVersions, r.Version)
	}
	if !slices.Contains(crdVersions, "2.0.0") {
		t.Fatalf("the new version's CRD is not in the history: %v", crdVersions)
	}
	// The loop's next read of an unchanged index is conditional: 304, nothing parsed.
	notModified := repo.NotModified()
	if n := b.srv.refresh.Round(t.Context()); n != 0 {
		t.Fatalf("a round refreshed %d operators that were not due", n)
	}
	op, err := b.store.OperatorGetByName(t.Context(), "widgets")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := b.srv.refresh.Refresh(t.Context(), op, refresh.Options{}); err != nil || !res.NotModified || repo.NotModified() != notModified+1 {
		t.Fatalf("refresh of an unchanged index: %+v, %v (304s %d → %d)", res, err, notModified, repo.NotModified())
	}

	// A version gone from the source is marked, not deleted, and cannot be deployed.
	repo.Remove(t, "widget-operator", "1.0.0")
	res = refreshOK(t, b, olga, "widgets", nil)
	if !slices.Equal(res.Removed, []string{"1.0.0"}) || !slices.Equal(res.Versions, []string{"2.0.0", "1.1.0"}) {
		t.Fatalf("refresh after unpublishing 1.0.0: %+v", res)
	}
	var got api.Operator
	b.do("GET", "/api/v1/operators/widgets", b.viewer(), nil).json(t, &got)
	if len(got.RemovedVersions) != 1 || got.RemovedVersions[0].Version != "1.0.0" || got.RemovedVersions[0].Reason != store.VersionRemovedFromSource ||
		got.Refresh == nil || got.Refresh.Error != "" || got.Refresh.NextAt.IsZero() {
		t.Fatalf("operator after the refresh: %+v", got)
	}
	b.addCluster("dev-1", store.EnvironmentDev)
	e := expectInvalid(t, "deploy a removed version", b.do("POST", "/api/v1/deployments", olga,
		`{"operator": "widgets", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`), "version")
	if !strings.Contains(e.Message, "removed") {
		t.Fatalf("deploying a removed version: %+v", e)
	}

	// Refresh: roles, unknown operators, bad migration notes.
	expect(t, "refresh as viewer", b.do("POST", "/api/v1/operators/widgets/refresh", b.viewer(), nil), http.StatusForbidden)
	expect(t, "refresh unknown", b.do("POST", "/api/v1/operators/nope/refresh", olga, nil), http.StatusNotFound)
	expectInvalid(t, "refresh with a bad note", b.do("POST", "/api/v1/operators/widgets/refresh", olga,
		api.RefreshRequest{MigrationNotes: []api.MigrationNoteRequest{{CRD: "widgets." + charttest.Group}}}), "migrationNotes[0]")

	testOperatorPatch(t, b, repo)
	testOperatorDelete(t, b)
}

func refreshOK(t *testing.T, b *bundle, token, name string, body any) api.OperatorRefreshResult {
	t.Helper()
	r := b.do("POST", "/api/v1/operators/"+name+"/refresh", token, body)
	expect(t, "refresh "+name, r, http.StatusOK)
	var res api.OperatorRefreshResult
	r.json(t, &res)
	return res
}

func testOperatorPatch(t *testing.T, b *bundle, repo *charttest.Repository) {
	olga := b.token("olga", auth.Operator)
	r := b.do("PATCH", "/api/v1/operators/widgets", olga, `{"versions": "<2.0.0"}`)
	expect(t, "narrow the filter", r, http.StatusOK)
	var got api.Operator
	r.json(t, &got)
	if !slices.Equal(got.Versions, []string{"1.1.0"}) || got.VersionFilter != "<2.0.0" || len(got.RemovedVersions) != 2 {
		t.Fatalf("after narrowing the filter: %+v", got)
	}
	for _, rv := range got.RemovedVersions {
		if want := map[string]string{"2.0.0": store.VersionRemovedByFilter, "1.0.0": store.VersionRemovedFromSource}[rv.Version]; rv.Reason != want {
			t.Fatalf("removed %s for %q, want %q", rv.Version, rv.Reason, want)
		}
	}

	before := b.counts()
	for _, tt := range []struct {
		name, body, field string
	}{
		{"unreachable source", `{"chart": {"repository": "http://127.0.0.1:1/charts"}}`, "chart.repository"},
		{"unknown chart", `{"chart": {"name": "nope"}}`, "chart.name"},
		{"bad scheme", `{"chart": {"repository": "ftp://example.com"}}`, "chart.repository"},
		{"bad filter", `{"versions": ">>1"}`, "versions"},
		{"filter keeps none", `{"versions": ">=9"}`, "versions"},
		{"namespace", `{"namespace": "elsewhere"}`, "namespace"},
	} {
		expectInvalid(t, "patch: "+tt.name, b.do("PATCH", "/api/v1/operators/widgets", olga, tt.body), tt.field)
	}
	expect(t, "patch nothing", b.do("PATCH", "/api/v1/operators/widgets", olga, `{}`), http.StatusBadRequest)
	expect(t, "patch as viewer", b.do("PATCH", "/api/v1/operators/widgets", b.viewer(), `{"versions": ""}`), http.StatusForbidden)
	expect(t, "patch unknown", b.do("PATCH", "/api/v1/operators/nope", olga, `{"versions": ""}`), http.StatusNotFound)
	got = api.Operator{}
	b.do("GET", "/api/v1/operators/widgets", b.viewer(), nil).json(t, &got)
	if after := b.counts(); after != before || got.Chart.Repository != repo.URL || got.VersionFilter != "<2.0.0" {
		t.Fatalf("refused changes changed the operator: %+v (%+v, then %+v)", got, before, after)
	}

	// Another source: read whole, its versions stored, those it lacks marked removed.
	other := charttest.ServeRepository(t, widgetCharts()...)
	r = b.do("PATCH", "/api/v1/operators/widgets", olga, fmt.Sprintf(`{"chart": {"repository": %q}, "versions": ""}`, other.URL))
	expect(t, "move to another repository", r, http.StatusOK)
	got = api.Operator{}
	r.json(t, &got)
	if got.Chart.Repository != other.URL || !slices.Equal(got.Versions, []string{"2.0.0", "1.1.0", "1.0.0"}) || len(got.RemovedVersions) != 0 {
		t.Fatalf("after moving: %+v", got)
	}
}

func testOperatorDelete(t *testing.T, b *bundle) {
	olga, admin := b.token("olga", auth.Operator), b.admin()
	r := b.do("POST", "/api/v1/deployments", olga, `{"operator": "widgets", "version": "1.1.0", "clusters": ["dev-1"], "strategy": "Direct"}`)
	expect(t, "deploy 1.1.0", r, http.StatusAccepted)
	var d api.Deployment
	r.json(t, &d)

	expect(t, "delete as operator", b.do("DELETE", "/api/v1/operators/widgets", olga, nil), http.StatusForbidden)
	r = b.do("DELETE", "/api/v1/operators/widgets", admin, nil)
	expect(t, "delete with an active deployment", r, http.StatusConflict)
	if e := r.apiError(t); !strings.Contains(e.Message, d.ID) {
		t.Fatalf("the 409 does not name deployment %s: %+v", d.ID, e)
	}
	expect(t, "move with an active deployment", b.do("PATCH", "/api/v1/operators/widgets", olga, `{"chart": {"name": "widget-operator-2"}}`),
		http.StatusConflict)

	b.setStatus(d.ID, store.DeploymentCompleted, nil)
	expect(t, "delete", b.do("DELETE", "/api/v1/operators/widgets", admin, nil), http.StatusNoContent)
	expect(t, "delete again", b.do("DELETE", "/api/v1/operators/widgets", admin, nil), http.StatusNotFound)

	// The history stays readable; the operator can no longer change or be deployed.
	var got api.Operator
	b.do("GET", "/api/v1/operators/widgets", b.viewer(), nil).json(t, &got)
	if got.DeletedAt == nil {
		t.Fatalf("deleted operator: %+v", got)
	}
	expect(t, "the deployment", b.do("GET", "/api/v1/deployments/"+d.ID, b.viewer(), nil), http.StatusOK)
	expect(t, "refresh deleted", b.do("POST", "/api/v1/operators/widgets/refresh", olga, nil), http.StatusConflict)
	expect(t, "patch deleted", b.do("PATCH", "/api/v1/operators/widgets", olga, `{"versions": ""}`), http.StatusConflict)
	expect(t, "register the name again", b.do("POST", "/api/v1/operators", olga, api.OperatorRequest{Name: "widgets", Namespace: "widget-system",
		Chart: api.ChartRef{Repository: "http://127.0.0.1:1", Name: "widget-operator"}}), http.StatusConflict)
	e := expectInvalid(t, "deploy deleted", b.do("POST", "/api/v1/deployments", olga,
		`{"operator": "widgets", "version": "1.1.0", "clusters": ["dev-1"], "strategy": "Direct"}`), "operator")
	if !strings.Contains(e.Message, "deleted") {
		t.Fatalf("deploying a deleted operator: %+v", e)
	}

	var audit api.AuditList
	b.do("GET", "/api/v1/audit?limit=1000", admin, nil).json(t, &audit)
	count := map[string]int{}
	for _, e := range audit.Items {
		count[e.Action+"/"+e.Result]++
	}
	// Refusals (400, 404, 409) are "invalid", as everywhere in the audit log.
	for _, key := range []string{"operator.refresh/success", "operator.refresh/invalid", "operator.refresh/denied",
		"operator.update/success", "operator.update/invalid", "operator.update/denied",
		"operator.delete/success", "operator.delete/denied", "operator.delete/invalid"} {
		if count[key] == 0 {
			t.Errorf("no audit record %s: %v", key, count)
		}
	}
}
