//go:build e2e

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/manager/analysis/promtest"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/secrettest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
)

// clusterBody is a POST /api/v1/clusters body.
func clusterBody(t testing.TB, name string, kubeconfig []byte) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]string{"name": name, "environment": "Dev", "kubeconfig": string(kubeconfig)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// health is GET /api/v1/clusters/{name}/health?refresh=true.
func health(t testing.TB, p *proc, name string) (state, reason string) {
	t.Helper()
	var h struct{ Health, Reason string }
	r := p.must("GET", "/api/v1/clusters/"+name+"/health?refresh=true", p.d.admin(), nil, http.StatusOK)
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatal(err)
	}
	return h.Health, h.Reason
}

// openStore opens the deployment's database from the test (the serving process may run: SQLite
// in WAL mode and PostgreSQL both allow it).
func (d *deployment) openStore() store.Store {
	d.t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	if d.engine == "sqlite" {
		st, err = sqlitestore.Open(ctx, d.dbPath)
	} else {
		st, err = pgstore.Open(ctx, d.dbURL)
	}
	if err != nil {
		d.t.Fatalf("opening the %s store: %v", d.engine, err)
	}
	d.t.Cleanup(func() { _ = st.Close() })
	return st
}

// A rotation: a cluster registered under key A keeps working after the keyring becomes "B, A",
// rotate-key re-seals, and A is dropped. Without the rotation, B alone cannot open it.
func TestRotateKey(t *testing.T) {
	t.Parallel()
	srv := fleet(t, 1).Servers[0]
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			d := newDeployment(t, engine)
			keyA, keyB := keyLine(t, "key-a"), keyLine(t, "key-b")
			d.keys = keyA
			name := "rotate-" + engine
			p := d.serve("--insecure-http")
			p.must("POST", "/api/v1/clusters", d.admin(), clusterBody(t, name, srv.Kubeconfig), http.StatusCreated)
			// An operator of a private chart repository: its credentials are sealed under A too.
			repo := charttest.ServePrivateRepository(t, charttest.Auth{Username: "ci", Password: "s3cret-rotate"},
				charttest.OperatorChart("widget-operator", "1.0.0", charttest.Base))
			p.must("POST", "/api/v1/operators", d.admin(), []byte(fmt.Sprintf(`{"name": "private", "namespace": "widgets",
				"chart": {"repository": %q, "name": "widget-operator", "credentials": {"username": "ci", "password": "s3cret-rotate"}}}`, repo.URL)), http.StatusCreated)
			// The cluster's Prometheus with basic auth: its password is sealed under A too.
			prom := promtest.Start(t, promtest.Options{BasicAuth: map[string]string{"slipway": "pr0m-rotate"}})
			p.must("PUT", "/api/v1/clusters/"+name+"/prometheus", d.admin(), []byte(fmt.Sprintf(
				`{"url": %q, "auth": "basic", "username": "slipway", "password": "pr0m-rotate"}`, prom.URL)), http.StatusOK)
			p.Stop()

			// B alone before the rotation: the cluster's credentials do not open.
			d.keys = keyB
			p = d.serve("--insecure-http")
			if h, reason := health(t, p, name); h != "Unhealthy" {
				t.Fatalf("with only key B before rotate-key: health %s (%s), want Unhealthy", h, reason)
			}
			p.Stop()

			d.keys = keyB + "\n" + keyA
			p = d.serve("--insecure-http")
			if h, reason := health(t, p, name); h != "Healthy" {
				t.Fatalf("with keys B, A: health %s (%s), want Healthy", h, reason)
			}
			r := d.run("rotate-key")
			if r.code != 0 || !strings.Contains(r.stdout, "re-sealed the credentials of 1 clusters under key key-b") ||
				!strings.Contains(r.stdout, "re-sealed the chart source credentials of 1 operators under key key-b") ||
				!strings.Contains(r.stdout, "re-sealed the Prometheus credentials of 1 clusters under key key-b") {
				t.Fatalf("manager rotate-key: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			p.Stop()

			d.keys = keyB
			p = d.serve("--insecure-http")
			if h, reason := health(t, p, name); h != "Healthy" {
				t.Fatalf("with only key B after rotate-key: health %s (%s), want Healthy", h, reason)
			}
			c, err := d.openStore().ClusterGetByName(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			if c.KeyID != "key-b" {
				t.Fatalf("cluster sealed under %q after the rotation, want key-b", c.KeyID)
			}
			if pc, err := d.openStore().ClusterPrometheusGet(context.Background(), name); err != nil || pc.KeyID != "key-b" {
				t.Fatalf("the cluster's Prometheus after the rotation: %+v, %v; want it sealed under key-b", pc, err)
			}
			// The operator's credentials open with B alone: shown as set, and the refresh reads
			// the private repository with them.
			got := p.must("GET", "/api/v1/operators/private", d.admin(), nil, http.StatusOK).body
			if !strings.Contains(string(got), `"credentials":{"username":"ci","set":true}`) || strings.Contains(string(got), "s3cret-rotate") {
				t.Fatalf("operator after rotate-key: %s", got)
			}
			p.must("POST", "/api/v1/operators/private/refresh", d.admin(), nil, http.StatusOK)
		})
	}
}

// The kubeconfig's secret (its client key) appears in no response, no log line (debug level), no
// audit record and nowhere in the database, after registration, reads, health checks, a
// duplicate and a refused registration.
func TestKubeconfigSecretStaysSecret(t *testing.T) {
	t.Parallel()
	srv := fleet(t, 1).Servers[0]
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			d := newDeployment(t, engine)
			p := d.serve("--insecure-http", "--log-level=debug")
			admin, viewer := d.admin(), d.token("victor", auth.Viewer)
			name := "secret-" + engine
			p.must("POST", "/api/v1/clusters", admin, clusterBody(t, name, srv.Kubeconfig), http.StatusCreated)
			p.must("POST", "/api/v1/clusters", admin, clusterBody(t, name, srv.Kubeconfig), http.StatusConflict)
			p.must("POST", "/api/v1/clusters", viewer, clusterBody(t, name+"-viewer", srv.Kubeconfig), http.StatusForbidden)
			unreachable := withServer(t, srv.Kubeconfig, "https://127.0.0.1:1")
			p.must("POST", "/api/v1/clusters", admin, clusterBody(t, name+"-down", unreachable), http.StatusBadRequest)
			bad := bytes.Replace(clusterBody(t, name+"-bad", srv.Kubeconfig), []byte(`"Dev"`), []byte(`"Moon"`), 1)
			p.must("POST", "/api/v1/clusters", admin, bad, http.StatusBadRequest)
			p.must("GET", "/api/v1/clusters/"+name, viewer, nil, http.StatusOK)
			p.must("GET", "/api/v1/clusters", viewer, nil, http.StatusOK)
			if h, reason := health(t, p, name); h != "Healthy" {
				t.Fatalf("health %s (%s), want Healthy", h, reason)
			}
			audit := p.must("GET", "/api/v1/audit?limit=1000", admin, nil, http.StatusOK).body
			if !bytes.Contains(audit, []byte("cluster.create")) {
				t.Fatalf("no cluster.create in the audit log: %s", audit)
			}
			p.Stop() // the SQLite WAL as the process leaves it, and every log line written

			places := map[string][]byte{
				"responses": p.bodies.Bytes(),
				"log":       p.stderr.Bytes(),
				"audit":     audit,
				"database":  secrettest.DatabaseBytes(t, d.dbPath, d.dbURL),
			}
			if !bytes.Contains(places["log"], []byte(name)) {
				t.Fatalf("the log never names the cluster: is it the process's log?\n%s", tailLines(places["log"], 20))
			}
			forms := secrettest.Forms(t, srv.Kubeconfig)
			for where, data := range places {
				secrettest.AssertAbsent(t, where, data, forms)
			}
		})
	}
}

// withServer returns kubeconfig with every cluster's server replaced.
func withServer(t testing.TB, kubeconfig []byte, server string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
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
	return out
}
