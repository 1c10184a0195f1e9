package refresh_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
	"github.com/slipway-dev/slipway/internal/manager/server"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The public operator of the acceptance test: Kyverno's own chart (charts/kyverno with its crds
// and grafana subcharts), as published, taken from the Go module carrying its source at two
// release tags. The module proxy serves them (go mod download into the module cache, outside
// the repository); the test packages each chart directory the way helm package does.
var kyvernoReleases = []struct{ module, chart string }{
	{"v1.12.5", "3.2.6"},
	{"v1.13.4", "3.3.6"},
}

// kyvernoChart returns Kyverno's chart at module version v as files for a chart repository.
func kyvernoChart(t *testing.T, v string) charttest.ChartFiles {
	t.Helper()
	dir := filepath.Join(charttest.GoModuleDir(t, "github.com/kyverno/kyverno", v), "charts", "kyverno")
	files := charttest.ChartFiles{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// managerAPI is the manager's API over a real server with the refresh loop and the engine running.
type managerAPI struct {
	t      *testing.T
	url    string
	secret []byte
}

func (a *managerAPI) do(method, path, role string, body any, out any) int {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	tok, err := auth.Mint(a.secret, "u-"+role, []auth.Role{auth.Role(role)}, time.Hour, time.Now())
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		a.t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	} else if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			a.t.Fatalf("%s %s: %v (%s)", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// kyvernoValues are the deployments' Helm values: Kyverno's post-upgrade hook Jobs (cleaning
// policy reports, migrating stored CRs with kubectl) off: in the test's clusters (kwok nodes that
// run no container) the upgrade with them did not become ready within the install timeout. The
// chart's own objects, its CRDs included, are installed and upgraded as published.
var kyvernoValues = map[string]any{"policyReportsCleanup": map[string]any{"enabled": false},
	"crds": map[string]any{"migration": map[string]any{"enabled": false}}}

// deploy posts a Direct deployment of version to dev-1 and waits for it to end Completed.
func (a *managerAPI) deploy(version string) {
	a.t.Helper()
	var d api.Deployment
	if s := a.do("POST", "/api/v1/deployments", "Operator", map[string]any{"operator": "kyverno", "version": version,
		"clusters": []string{"dev-1"}, "strategy": "Direct", "values": kyvernoValues}, &d); s != http.StatusAccepted {
		a.t.Fatalf("deploying kyverno %s: %d", version, s)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for d.Status != "Completed" {
		switch d.Status {
		case "Failed", "RolledBack", "Cancelled":
			a.t.Fatalf("deployment of kyverno %s ended %s: %s", version, d.Status, d.Reason)
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("deployment of kyverno %s still %s", version, d.Status)
		}
		time.Sleep(300 * time.Millisecond)
		a.do("GET", "/api/v1/deployments/"+d.ID, "Viewer", nil, &d)
	}
}

// TestAcceptance_PublicOperatorChart: Kyverno's real chart served from a plain Helm HTTP
// repository. Registered with 3.2.6 and deployed; 3.3.6 published afterwards appears through the
// refresh loop; the change of its ClusterPolicy CRD is validated against a policy stored in the
// cluster; the upgrade deploys.
func TestAcceptance_PublicOperatorChart(t *testing.T) {
	older, newer := kyvernoReleases[0], kyvernoReleases[1]
	repo := charttest.ServeRepository(t, kyvernoChart(t, older.module))
	newerChart := kyvernoChart(t, newer.module)

	st := replicas(t, "sqlite", 1)[0]
	logs := &testenv.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "ailed") || strings.Contains(line, "ERROR") {
					t.Log(line)
				}
			}
		}
	})
	charts, err := operators.New(operators.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRollout(t, st, charts, log)
	ref, err := server.NewRefresher(refresh.Config{Store: st, Charts: charts, Logger: log, ReplicaID: "replica-a",
		Interval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("0123456789abcdef0123456789abcdef-test")
	verifier, err := auth.NewHS256(secret, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{}, server.Deps{Store: st, Clusters: r.clusters, Charts: charts, Verifier: verifier,
		Limiter: ratelimit.New(map[string]ratelimit.Rule{}, time.Now), Logger: log, Rollouts: r.eng, Refresher: ref})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	a := &managerAPI{t: t, url: ts.URL, secret: secret}

	var op api.Operator
	if s := a.do("POST", "/api/v1/operators", "Operator", map[string]any{"name": "kyverno", "namespace": "kyverno",
		"chart": map[string]string{"repository": repo.URL, "name": "kyverno"}}, &op); s != http.StatusCreated ||
		!slices.Equal(op.Versions, []string{older.chart}) {
		t.Fatalf("registering kyverno: %d %+v", s, op)
	}
	if err := ref.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Stop)
	a.deploy(older.chart)

	// A policy stored in the cluster under the older CRD.
	dyn, err := dynamic.NewForConfig(testenv.WorkloadFleet(t, 1).Servers[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "require-team-label"},
		"spec": map[string]any{"validationFailureAction": "Audit", "rules": []any{map[string]any{
			"name": "team", "match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Pod"}}}}},
			"validate": map[string]any{"message": "a team label is required", "pattern": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"team": "?*"}}}},
		}}},
	}}
	gvr := schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
	if _, err := dyn.Resource(gvr).Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("storing a ClusterPolicy: %v", err)
	}

	repo.Add(t, newerChart)
	waitFor(t, "the loop to find kyverno "+newer.chart, func() bool {
		a.do("GET", "/api/v1/operators/kyverno", "Viewer", nil, &op)
		return slices.Equal(op.Versions, []string{newer.chart, older.chart})
	})
	var rep api.ValidationReport
	if s := a.do("POST", "/api/v1/crds/clusterpolicies.kyverno.io/validate", "Viewer",
		map[string]any{"operator": "kyverno", "version": newer.chart, "clusters": []string{"dev-1"}}, &rep); s != http.StatusOK {
		t.Fatalf("validate: %d", s)
	}
	if rep.From == nil || rep.From.Version != older.chart || rep.To.Version != newer.chart || len(rep.Changes) == 0 ||
		len(rep.Clusters) != 1 || !rep.Clusters[0].Installed || rep.Clusters[0].Objects != 1 || rep.Clusters[0].Error != "" {
		t.Fatalf("the ClusterPolicy CRD from %s to %s: %s", older.chart, newer.chart, fmt.Sprintf("%+v", rep))
	}
	t.Logf("ClusterPolicy %s → %s: %d changes (breaking %v), %d invalid objects", older.chart, newer.chart, len(rep.Changes),
		rep.Breaking, len(rep.Clusters[0].InvalidObjects))
	a.deploy(newer.chart)
}
