package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/secrettest"
)

// Fleet servers: 0, 1 and 2 are registered by any test and never removed; 3 and 4 are removed
// by the clusters test of one engine each and used by no other test (a removed cluster's
// namespace stays Terminating here, with no namespace controller, so a server that lost a
// registration cannot be registered again).
func deletableServer(engine string) int {
	if engine == "sqlite" {
		return 3
	}
	return 4
}

func TestClusters(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			b := setup(t, engine)
			f := fleet(t)
			admin := b.admin()
			shared := string(f.Servers[0].Kubeconfig)
			removable := string(f.Servers[deletableServer(engine)].Kubeconfig)

			r := b.do("POST", "/api/v1/clusters", admin, api.ClusterRequest{Name: "prod-1", Environment: "Production", Kubeconfig: shared})
			expect(t, "register prod-1", r, http.StatusCreated)
			var c api.Cluster
			r.json(t, &c)
			if c.Name != "prod-1" || c.Environment != "Production" || !strings.HasPrefix(c.KubernetesVersion, "v1.") || c.Health != "Healthy" {
				t.Fatalf("registered cluster: %+v", c)
			}
			expect(t, "register dev-1", b.do("POST", "/api/v1/clusters", admin,
				api.ClusterRequest{Name: "dev-1", Environment: "Dev", Kubeconfig: removable}), http.StatusCreated)
			expect(t, "register staging-1", b.do("POST", "/api/v1/clusters", admin,
				api.ClusterRequest{Name: "staging-1", Environment: "Staging", Kubeconfig: shared}), http.StatusCreated)

			before := b.counts()
			bad := []struct {
				name  string
				req   any
				field string
			}{
				{"bad name", api.ClusterRequest{Name: "Prod_1", Environment: "Dev", Kubeconfig: shared}, "name"},
				{"no name", api.ClusterRequest{Environment: "Dev", Kubeconfig: shared}, "name"},
				{"bad environment", api.ClusterRequest{Name: "x", Environment: "QA", Kubeconfig: shared}, "environment"},
				{"kubeconfig not YAML", api.ClusterRequest{Name: "x", Environment: "Dev", Kubeconfig: "{{{"}, "kubeconfig"},
				{"kubeconfig empty", api.ClusterRequest{Name: "x", Environment: "Dev"}, "kubeconfig"},
				{"kubeconfig with an exec plugin", api.ClusterRequest{Name: "x", Environment: "Dev", Kubeconfig: execKubeconfig}, "kubeconfig"},
				{"unreachable", api.ClusterRequest{Name: "x", Environment: "Dev", Kubeconfig: withServer(t, shared, "https://127.0.0.1:1")}, "kubeconfig"},
				{"unauthorized", api.ClusterRequest{Name: "x", Environment: "Dev", Kubeconfig: withToken(t, shared, "not-a-valid-token")}, "kubeconfig"},
			}
			for _, tt := range bad {
				expectInvalid(t, tt.name, b.do("POST", "/api/v1/clusters", admin, tt.req), tt.field)
			}
			r = b.do("POST", "/api/v1/clusters", admin, api.ClusterRequest{Name: "prod-1", Environment: "Production", Kubeconfig: shared})
			expect(t, "duplicate", r, http.StatusConflict)
			if e := r.apiError(t); e.Code != api.CodeAlreadyExists {
				t.Fatalf("duplicate: %+v", e)
			}
			if after := b.counts(); after != before {
				t.Fatalf("rejected registrations wrote to the store: %+v, then %+v", before, after)
			}

			// Lists: paginated and filterable.
			var page1, page2 api.ClusterList
			r = b.do("GET", "/api/v1/clusters?limit=2", b.viewer(), nil)
			expect(t, "list", r, http.StatusOK)
			r.json(t, &page1)
			if len(page1.Items) != 2 || page1.Continue == "" {
				t.Fatalf("first page: %+v", page1)
			}
			r = b.do("GET", "/api/v1/clusters?limit=2&continue="+page1.Continue, b.viewer(), nil)
			r.json(t, &page2)
			if len(page2.Items) != 1 || page2.Continue != "" || page2.Items[0].Name != "staging-1" {
				t.Fatalf("second page: %+v", page2)
			}
			var prod api.ClusterList
			b.do("GET", "/api/v1/clusters?environment=Production", b.viewer(), nil).json(t, &prod)
			if len(prod.Items) != 1 || prod.Items[0].Name != "prod-1" {
				t.Fatalf("environment filter: %+v", prod)
			}
			var healthy api.ClusterList
			b.do("GET", "/api/v1/clusters?health=Healthy", b.viewer(), nil).json(t, &healthy)
			if len(healthy.Items) != 3 {
				t.Fatalf("health filter: %+v", healthy)
			}
			expectInvalid(t, "bad filter", b.do("GET", "/api/v1/clusters?environment=QA", b.viewer(), nil), "environment")
			expectInvalid(t, "bad limit", b.do("GET", "/api/v1/clusters?limit=0", b.viewer(), nil), "limit")
			expectInvalid(t, "bad continue", b.do("GET", "/api/v1/clusters?continue=not*a*token", b.viewer(), nil), "continue")

			// One cluster, its health (forced check), 404s.
			expect(t, "get", b.do("GET", "/api/v1/clusters/prod-1", b.viewer(), nil), http.StatusOK)
			expect(t, "get unknown", b.do("GET", "/api/v1/clusters/nope", b.viewer(), nil), http.StatusNotFound)
			var h api.ClusterHealth
			r = b.do("GET", "/api/v1/clusters/prod-1/health?refresh=true", b.viewer(), nil)
			expect(t, "health", r, http.StatusOK)
			r.json(t, &h)
			if h.Health != "Healthy" || h.LastChecked == nil {
				t.Fatalf("health: %+v", h)
			}
			expect(t, "health unknown", b.do("GET", "/api/v1/clusters/nope/health", b.viewer(), nil), http.StatusNotFound)

			// Removal: Admin only; gone afterwards.
			expect(t, "delete as viewer", b.do("DELETE", "/api/v1/clusters/dev-1", b.viewer(), nil), http.StatusForbidden)
			expect(t, "delete", b.do("DELETE", "/api/v1/clusters/dev-1", admin, nil), http.StatusNoContent)
			expect(t, "get deleted", b.do("GET", "/api/v1/clusters/dev-1", admin, nil), http.StatusNotFound)
			expect(t, "delete again", b.do("DELETE", "/api/v1/clusters/dev-1", admin, nil), http.StatusNotFound)

			// The audit log has the mutations and the cluster access, with who and the request id.
			var audit api.AuditList
			b.do("GET", "/api/v1/audit?targetKind=cluster", admin, nil).json(t, &audit)
			seen := map[string]int{}
			for _, e := range audit.Items {
				if e.Actor != "alice" && e.Actor != "victor" || e.RequestID == "" {
					t.Fatalf("audit record without actor or request id: %+v", e)
				}
				seen[e.Action+"/"+e.Result]++
			}
			for _, want := range []string{"cluster.create/success", "cluster.create/invalid", "cluster.delete/success", "cluster.access/success"} {
				if seen[want] == 0 {
					t.Errorf("no %s in the audit log: %v", want, seen)
				}
			}

			assertNoSecret(t, b, []byte(shared), []byte(removable))
		})
	}
}

// assertNoSecret greps every response, the logs, the audit log and the database for the
// credentials of the kubeconfigs.
func assertNoSecret(t *testing.T, b *bundle, kubeconfigs ...[]byte) {
	t.Helper()
	var forms [][]byte
	for _, kc := range kubeconfigs {
		forms = append(forms, secrettest.Forms(t, kc)...)
	}
	var audit api.AuditList
	b.do("GET", "/api/v1/audit?limit=1000", b.admin(), nil).json(t, &audit)
	secrettest.AssertAbsent(t, "responses", b.bodies.Bytes(), forms)
	secrettest.AssertAbsent(t, "logs", b.logs.Bytes(), forms)
	secrettest.AssertAbsent(t, "audit log", []byte(fmt.Sprintf("%+v", audit.Items)), forms)
	secrettest.AssertAbsent(t, "database", secrettest.DatabaseBytes(t, b.dbPath, b.pgURL), forms)
}

const execKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

// withServer returns kc with every cluster's server replaced.
func withServer(t *testing.T, kc, server string) string {
	t.Helper()
	cfg, err := clientcmd.Load([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// withToken returns kc authenticating with a bearer token instead of its client certificate.
func withToken(t *testing.T, kc, token string) string {
	t.Helper()
	cfg, err := clientcmd.Load([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.ClientCertificateData, ai.ClientKeyData, ai.Token = nil, nil, token
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
