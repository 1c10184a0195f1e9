package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

var analysisCases = []testCase{
	{"TemplateCRUD", func(t *testing.T, b *testBundle) {
		spec := json.RawMessage(`{"name":"error-rate","query":"up","successCondition":{"max":0.01}}`)
		tm, err := b.store.AnalysisTemplateCreate(b.ctx, &store.AnalysisTemplate{Name: "error-rate", Spec: spec, CreatedAt: b.now, UpdatedAt: b.now})
		requireOK(t, err, "create")
		sameJSON(t, tm.Spec, spec, "spec")
		requireEqual(t, tm.CreatedAt, b.now, "created at")
		_, err = b.store.AnalysisTemplateCreate(b.ctx, &store.AnalysisTemplate{Name: "error-rate", Spec: spec, CreatedAt: b.now, UpdatedAt: b.now})
		requireErr(t, err, store.ErrAlreadyExists, "create twice")
		_, err = b.store.AnalysisTemplateCreate(b.ctx, &store.AnalysisTemplate{Name: "bad", Spec: json.RawMessage(`{nope`)})
		if err == nil {
			t.Fatal("a spec that is not JSON was stored")
		}
		for _, n := range []string{"b-two", "a-one"} {
			_, err = b.store.AnalysisTemplateCreate(b.ctx, &store.AnalysisTemplate{Name: n, Spec: spec, CreatedAt: b.now, UpdatedAt: b.now})
			requireOK(t, err, "create "+n)
		}
		list, err := b.store.AnalysisTemplateList(b.ctx, &store.AnalysisTemplateListParams{})
		requireOK(t, err, "list")
		requireEqual(t, names(list, tmplName), []string{"a-one", "b-two", "error-rate"}, "list by name")
		list, err = b.store.AnalysisTemplateList(b.ctx, &store.AnalysisTemplateListParams{After: "a-one", Limit: 1})
		requireOK(t, err, "list page")
		requireEqual(t, names(list, tmplName), []string{"b-two"}, "page after a-one")

		later := b.now.Add(time.Minute)
		spec2 := json.RawMessage(`{"name":"error-rate","query":"up","successCondition":{"max":0.02}}`)
		up, err := b.store.AnalysisTemplateUpdate(b.ctx, &store.AnalysisTemplate{Name: "error-rate", Spec: spec2, UpdatedAt: later})
		requireOK(t, err, "update")
		sameJSON(t, up.Spec, spec2, "updated spec")
		requireEqual(t, []time.Time{up.CreatedAt, up.UpdatedAt}, []time.Time{b.now, later}, "times after update")
		got, err := b.store.AnalysisTemplateGet(b.ctx, "error-rate")
		requireOK(t, err, "get")
		sameJSON(t, got.Spec, spec2, "read back")
		_, err = b.store.AnalysisTemplateUpdate(b.ctx, &store.AnalysisTemplate{Name: "nope", Spec: spec2, UpdatedAt: later})
		requireErr(t, err, store.ErrNotFound, "update unknown")

		requireOK(t, b.store.AnalysisTemplateDelete(b.ctx, "error-rate"), "delete")
		requireErr(t, b.store.AnalysisTemplateDelete(b.ctx, "error-rate"), store.ErrNotFound, "delete twice")
		_, err = b.store.AnalysisTemplateGet(b.ctx, "error-rate")
		requireErr(t, err, store.ErrNotFound, "get deleted")
	}},
	{"ClusterPrometheus", func(t *testing.T, b *testBundle) {
		c := Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "prom-a"})
		_, err := b.store.ClusterPrometheusGet(b.ctx, "prom-a")
		requireErr(t, err, store.ErrNotFound, "none yet")
		p, err := b.store.ClusterPrometheusSet(b.ctx, &store.ClusterPrometheus{ClusterName: "prom-a", URL: "https://prom:9090",
			AuthKind: "bearer", SecretCiphertext: []byte("sealed"), KeyID: "k1", CAPEM: "-----BEGIN…", UpdatedAt: b.now})
		requireOK(t, err, "set")
		requireEqual(t, []any{p.ClusterID, p.ClusterName, p.URL, p.AuthKind, string(p.SecretCiphertext), p.KeyID, p.CAPEM, p.CreatedAt},
			[]any{c.ID, "prom-a", "https://prom:9090", "bearer", "sealed", "k1", "-----BEGIN…", b.now}, "set")
		later := b.now.Add(time.Minute)
		p, err = b.store.ClusterPrometheusSet(b.ctx, &store.ClusterPrometheus{ClusterName: "prom-a", URL: "http://prom:9090",
			AuthKind: "none", UpdatedAt: later})
		requireOK(t, err, "replace")
		got, err := b.store.ClusterPrometheusGet(b.ctx, "prom-a")
		requireOK(t, err, "get")
		requireEqual(t, got, &store.ClusterPrometheus{ClusterID: c.ID, ClusterName: "prom-a", URL: "http://prom:9090",
			AuthKind: "none", CreatedAt: b.now, UpdatedAt: later}, "replaced (created at kept, secret gone)")
		requireEqual(t, p, got, "set's answer")
		sealed, err := b.store.ClusterPrometheusListSealed(b.ctx)
		requireOK(t, err, "list sealed")
		requireEqual(t, len(sealed), 0, "sealed after replace")

		_, err = b.store.ClusterPrometheusSet(b.ctx, &store.ClusterPrometheus{ClusterName: "nope", URL: "http://x", AuthKind: "none", UpdatedAt: b.now})
		requireErr(t, err, store.ErrNotFound, "unknown cluster")
		_, err = b.store.ClusterPrometheusSet(b.ctx, &store.ClusterPrometheus{ClusterName: "prom-a", URL: "http://x", AuthKind: "oauth", UpdatedAt: b.now})
		if err == nil {
			t.Fatal("an unknown auth kind was stored")
		}

		Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "prom-b"})
		_, err = b.store.ClusterPrometheusSet(b.ctx, &store.ClusterPrometheus{ClusterName: "prom-b", URL: "http://x", AuthKind: "basic",
			SecretCiphertext: []byte("s"), KeyID: "k0", UpdatedAt: b.now})
		requireOK(t, err, "set b")
		sealed, err = b.store.ClusterPrometheusListSealed(b.ctx)
		requireOK(t, err, "list sealed")
		requireEqual(t, len(sealed), 1, "sealed configs")
		requireEqual(t, []string{sealed[0].ClusterName, sealed[0].KeyID}, []string{"prom-b", "k0"}, "sealed config")

		requireOK(t, b.store.ClusterPrometheusDelete(b.ctx, "prom-a"), "delete")
		requireErr(t, b.store.ClusterPrometheusDelete(b.ctx, "prom-a"), store.ErrNotFound, "delete twice")
		// Deleting the cluster deletes its config.
		requireOK(t, b.store.ClusterDelete(b.ctx, "prom-b"), "delete cluster")
		_, err = b.store.ClusterPrometheusGet(b.ctx, "prom-b")
		requireErr(t, err, store.ErrNotFound, "config of a deleted cluster")
	}},
	{"DeploymentAnalyses", func(t *testing.T, b *testBundle) {
		d := NewDeployment(b.ctx, t, b.store, nil)
		planned := json.RawMessage(`[{"spec":{"name":"error-rate","query":"up","successCondition":{"max":0.01}},"template":"error-rate"}]`)
		d.Analyses = planned
		created, err := b.store.DeploymentCreate(b.ctx, d)
		requireOK(t, err, "create")
		sameJSON(t, created.Analyses, planned, "created")
		got, err := b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "get")
		sameJSON(t, got.Analyses, planned, "read back")
		// An update keeps them (they are the deployment's copy, written once).
		up, err := b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.Reason, d.Analyses = "moved on", json.RawMessage(`[]`)
			return nil
		})
		requireOK(t, err, "update")
		sameJSON(t, up.Analyses, planned, "after an update")
		list, err := b.store.DeploymentList(b.ctx, &store.DeploymentListParams{Limit: 10})
		requireOK(t, err, "list")
		requireEqual(t, len(list), 1, "deployments")
		sameJSON(t, list[0].Analyses, planned, "listed")
		plain := Deployment(b.ctx, t, b.store, nil)
		requireEqual(t, plain.Analyses, json.RawMessage(nil), "a deployment without analyses")
	}},
	{"Measurements", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, nil)
		v, base := 0.25, 0.0
		in := []*store.AnalysisMeasurement{
			{DeploymentID: d.ID, Cluster: "c1", StageIndex: 0, AnalysisName: "error-rate", Query: `sum(x{ns="a"})`,
				Value: &v, BaselineValue: &base, Verdict: "Failed", Message: "0.25 > max 0.01", MeasuredAt: b.now},
			{DeploymentID: d.ID, Cluster: "c1", StageIndex: 1, AnalysisName: "error-rate", Query: `sum(x{ns="a"})`,
				Verdict: "Inconclusive", Message: "the query returned no data", MeasuredAt: b.now.Add(time.Second)},
		}
		for i, m := range in {
			out, err := b.store.AnalysisMeasurementInsert(b.ctx, m)
			requireOK(t, err, "insert")
			if out.ID == 0 {
				t.Fatalf("measurement %d has no id", i)
			}
			m.ID = out.ID
		}
		got, err := b.store.AnalysisMeasurementList(b.ctx, d.ID)
		requireOK(t, err, "list")
		requireEqual(t, got, in, "measurements read back (nil values stay nil, 0 stays 0)")
		_, err = b.store.AnalysisMeasurementInsert(b.ctx, &store.AnalysisMeasurement{DeploymentID: uuid.NewString(),
			Cluster: "c1", AnalysisName: "a", Query: "q", Verdict: "Error", MeasuredAt: b.now})
		requireErr(t, err, store.ErrNotFound, "unknown deployment")
		_, err = b.store.AnalysisMeasurementInsert(b.ctx, &store.AnalysisMeasurement{DeploymentID: d.ID,
			Cluster: "c1", AnalysisName: "a", Query: "q", Verdict: "Maybe", MeasuredAt: b.now})
		if err == nil {
			t.Fatal("an unknown verdict was stored")
		}
		other, err := b.store.AnalysisMeasurementList(b.ctx, uuid.NewString())
		requireOK(t, err, "list other")
		requireEqual(t, len(other), 0, "measurements of another deployment")
	}},
}

func tmplName(t *store.AnalysisTemplate) string { return t.Name }
