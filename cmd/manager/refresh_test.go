//go:build e2e

package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// getOperator is GET /api/v1/operators/{name}.
func getOperator(t *testing.T, p *proc, name string) api.Operator {
	t.Helper()
	var op api.Operator
	if err := json.Unmarshal(p.must("GET", "/api/v1/operators/"+name, p.d.admin(), nil, http.StatusOK).body, &op); err != nil {
		t.Fatal(err)
	}
	return op
}

// waitVersion polls GET /api/v1/operators/{name} until version can be deployed (within timeout)
// and returns how long that took.
func waitVersion(t *testing.T, p *proc, name, version string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		op := getOperator(t, p, name)
		if slices.Contains(op.Versions, version) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("operator %s: version %s did not appear within %s: %+v", name, version, timeout, op)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deployedVersion is the app.kubernetes.io/version label of the operator's Deployment in the
// cluster (charttest's chart labels it with its appVersion).
func deployedVersion(t *testing.T, cfg *rest.Config, namespace, name string) string {
	t.Helper()
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := kc.AppsV1().Deployments(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Labels["app.kubernetes.io/version"]
}

// TestRefresh_VersionPublishedLaterIsDeployed: a chart version published after the operator was
// registered is deployed without registering it again, through the built binary on a cluster with
// workloads. On SQLite the refresh loop finds it (--operator-refresh-interval=1s) and reads the
// unchanged index conditionally (304) in between; on PostgreSQL, with the default interval,
// POST /api/v1/operators/{name}/refresh finds it and says so. Each then upgrades the operator
// from 1.0.0 to the new 1.0.1 (the Deployment in the cluster carries the new version). Approvals
// are off (--approval-environments=none): the approval flow has tests of its own.
func TestRefresh_VersionPublishedLaterIsDeployed(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testVersionPublishedLater(t, engine)
		})
	}
}

func testVersionPublishedLater(t *testing.T, engine string) {
	loop := engine == "sqlite"
	target := fleet(t, 2).Servers[slices.Index([]string{"sqlite", "postgres"}, engine)]
	// A CRD of the test's own (benchCharts): the fleet's servers are shared.
	charts := benchCharts()
	repo := charttest.ServeRepository(t, charts[0])
	args := []string{"--insecure-http", "--approval-environments=none"}
	if loop {
		args = append(args, "--operator-refresh-interval=1s")
	}
	p := newDeployment(t, engine).serve(args...)
	cluster, name := uniqueName("dev"), uniqueName("widgets")
	registerCluster(t, p, cluster, "Dev", target.Kubeconfig)
	registerOperator(t, p, name, "ns-"+name, repo.URL)
	olga := p.d.token("olga", auth.Operator)
	dep := postDeployment(t, p, olga, direct(name, "1.0.0", []string{cluster}))
	waitDeployment(t, p, dep.ID, "Completed", 2*time.Minute)

	repo.Add(t, charts[1])
	if loop {
		took := waitVersion(t, p, name, "1.0.1", 30*time.Second)
		t.Logf("the loop found 1.0.1 %s after it was published", took.Round(time.Millisecond))
	} else {
		var res api.OperatorRefreshResult
		if err := json.Unmarshal(p.must("POST", "/api/v1/operators/"+name+"/refresh", olga, nil, http.StatusOK).body, &res); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Added, []string{"1.0.1"}) || !slices.Equal(res.Versions, []string{"1.0.1", "1.0.0"}) {
			t.Fatalf("POST /refresh: %+v", res)
		}
	}
	if op := getOperator(t, p, name); op.Refresh == nil || op.Refresh.Error != "" || !slices.Equal(op.Versions, []string{"1.0.1", "1.0.0"}) {
		t.Fatalf("operator after the refresh: %+v", op)
	}
	up := postDeployment(t, p, olga, direct(name, "1.0.1", []string{cluster}))
	waitDeployment(t, p, up.ID, "Completed", 2*time.Minute)
	if got := deployedVersion(t, target.Config, "ns-"+name, name+"-"+operatorChart); got != "v1.0.1" {
		t.Fatalf("the cluster runs %q, want v1.0.1", got)
	}
	if loop {
		// Meanwhile the loop went on reading the index, unchanged since 1.0.1: conditionally.
		waitFor(t, "a 304 for the unchanged index", 10*time.Second, func() bool { return repo.NotModified() > 0 })
	}
}

// waitFor polls cond every 100 ms until it holds, failing the test after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
