//go:build e2e

package managertest_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

func TestMain(m *testing.M) {
	code := testenv.StopFleet(managertest.StopShared(m.Run()))
	if err := pgtest.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// TestShared_SeedsTheFleet checks the shared manager as the harness promises it: served over TLS
// with the test certificate, the four clusters registered in their environments and Healthy,
// the operator with its three versions and the Widget CRD's three revisions, 1.0.0 installed on
// every cluster by a completed Direct deployment that alice asked for and bob approved, and the
// users' tokens carrying their roles.
func TestShared_SeedsTheFleet(t *testing.T) {
	m := managertest.Shared(t)
	if again := managertest.Shared(t); again != m {
		t.Fatal("Shared started a second manager")
	}
	if !strings.HasPrefix(m.URL, "https://127.0.0.1:") || m.CAFile == "" {
		t.Fatalf("URL %s, CA file %q: want TLS on loopback", m.URL, m.CAFile)
	}
	if _, err := http.Get(m.URL + "/health"); err == nil {
		t.Fatal("a client that does not trust the test certificate reached the manager")
	}

	var clusters api.ClusterList
	m.Must(t, "GET", "/api/v1/clusters", managertest.Vera, nil, http.StatusOK).JSON(t, &clusters)
	var got []string
	for _, c := range clusters.Items {
		got = append(got, c.Name+"/"+c.Environment+"/"+c.Health)
		if c.KubernetesVersion == "" {
			t.Errorf("cluster %s has no Kubernetes version", c.Name)
		}
	}
	slices.Sort(got)
	if want := []string{"dev-1/Dev/Healthy", "dev-2/Dev/Healthy", "prod-1/Production/Healthy", "staging-1/Staging/Healthy"}; !slices.Equal(got, want) {
		t.Fatalf("clusters %v, want %v", got, want)
	}

	var op api.Operator
	m.Must(t, "GET", "/api/v1/operators/"+m.Operator, managertest.Otto, nil, http.StatusOK).JSON(t, &op)
	if want := []string{"1.0.0", "1.1.0", "2.0.0"}; m.Operator != "widget-operator" || !sameSet(op.Versions, want) {
		t.Fatalf("operator %s versions %v, want widget-operator with %v", op.Name, op.Versions, want)
	}
	var crd api.CRD
	m.Must(t, "GET", "/api/v1/crds/"+managertest.WidgetCRD, managertest.Vera, nil, http.StatusOK).JSON(t, &crd)
	if len(crd.Revisions) != 3 {
		t.Fatalf("CRD %s has %d revisions, want 3 (base, compatible, breaking)", crd.Name, len(crd.Revisions))
	}

	seed := m.Deployment(t, m.Seed.ID)
	if seed.Status != "Completed" || seed.Version != managertest.SeedVersion || seed.RequestedBy != managertest.Alice || len(seed.Clusters) != 4 {
		t.Fatalf("seed deployment: %s %s by %s on %d clusters", seed.Status, seed.Version, seed.RequestedBy, len(seed.Clusters))
	}
	for _, c := range seed.Clusters {
		if c.Status != "healthy" || c.HelmRevision < 1 {
			t.Errorf("seed on %s: %s, Helm revision %d", c.Name, c.Status, c.HelmRevision)
		}
	}
	approved := m.Approvals(t, m.Seed.ID, "approved")
	if len(approved) == 0 || approved[0].Decisions[0].Actor != managertest.Bob {
		t.Fatalf("the seed's approvals: %+v, want approved by bob", approved)
	}

	// The roles: a Viewer may not deploy, no token is 401.
	refused := `{"operator": "widget-operator", "version": "1.1.0", "clusters": ["dev-1"], "strategy": "Direct"}`
	m.Must(t, "POST", "/api/v1/deployments", managertest.Vera, refused, http.StatusForbidden)
	if r, err := m.Do("GET", "/api/v1/clusters", "", nil); err != nil || r.Status != http.StatusUnauthorized {
		t.Fatalf("GET /api/v1/clusters without a token: %v %v", r, err)
	}
}

// TestStart_OwnManager starts a manager of the test's own over plain HTTP with one cluster and
// no seed deployment: it is registered, its operator named apart from the shared one's.
func TestStart_OwnManager(t *testing.T) {
	m := managertest.Start(t, managertest.Options{PlainHTTP: true, NoSeed: true, Clusters: managertest.DefaultClusters[:1]})
	if !strings.HasPrefix(m.URL, "http://127.0.0.1:") || m.CAFile != "" {
		t.Fatalf("URL %s, CA file %q: want plain HTTP", m.URL, m.CAFile)
	}
	if !strings.HasPrefix(m.Operator, "widget-operator-") || m.Seed.ID != "" {
		t.Fatalf("operator %q, seed %q: want a name of its own and no seed", m.Operator, m.Seed.ID)
	}
	var list api.DeploymentList
	m.Must(t, "GET", "/api/v1/deployments", managertest.Alice, nil, http.StatusOK).JSON(t, &list)
	var clusters api.ClusterList
	m.Must(t, "GET", "/api/v1/clusters", managertest.Bob, nil, http.StatusOK).JSON(t, &clusters)
	if len(list.Items) != 0 || len(clusters.Items) != 1 || clusters.Items[0].Name != "dev-1" {
		t.Fatalf("%d deployments, clusters %+v: want none and dev-1", len(list.Items), clusters.Items)
	}
	var health api.HealthResponse
	m.Must(t, "GET", "/health", "", nil, http.StatusOK).JSON(t, &health)
	if health.Engine != "sqlite" {
		t.Fatalf("engine %q, want sqlite", health.Engine)
	}
}

// TestStart_PostgreSQL starts a manager over a PostgreSQL database of pgtest's server.
func TestStart_PostgreSQL(t *testing.T) {
	m := managertest.Start(t, managertest.Options{Engine: "postgres", NoSeed: true, Clusters: managertest.DefaultClusters[:1]})
	var health api.HealthResponse
	m.Must(t, "GET", "/health", "", nil, http.StatusOK).JSON(t, &health)
	if health.Engine != "postgres" || health.Database != "ok" {
		t.Fatalf("health %+v, want PostgreSQL ok", health)
	}
	var op api.Operator
	m.Must(t, "GET", "/api/v1/operators/"+m.Operator, managertest.Vera, nil, http.StatusOK).JSON(t, &op)
	if len(op.Versions) != 3 {
		t.Fatalf("operator %s on PostgreSQL has versions %v", op.Name, op.Versions)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
