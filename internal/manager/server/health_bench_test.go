package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkClusterHealthRefresh measures GET /api/v1/clusters/{name}/health?refresh=true (the
// design: < 2 s for the full cluster health) through the real API over TLS, a Viewer's token
// verified on each request, on each store engine: the cluster is a real kube-apiserver of the
// package's fleet, checked as the manager's credentials allow (GET /version and a list of one
// namespace), the result stored and the access audited. Each answer must be 200 and Healthy.
// It reports p50, p95 and p99 over samples requests per benchmark iteration.
//
//	SLIPWAY_BENCH_CLUSTER_HEALTH_SAMPLES=200 \
//	  go test -tags e2e ./internal/manager/server -run '^$' -bench ClusterHealthRefresh -benchtime 1x
func BenchmarkClusterHealthRefresh(b *testing.B) {
	samples := testenv.Sizes(b, "SLIPWAY_BENCH_CLUSTER_HEALTH_SAMPLES", 200)[0]
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			url, client, token := benchServer(b, engine)
			get := func() (time.Duration, api.ClusterHealth) {
				req, err := http.NewRequest(http.MethodGet, url+"/api/v1/clusters/bench-1/health?refresh=true", nil)
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+token)
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				took := time.Since(start)
				var h api.ClusterHealth
				if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Health != string(store.HealthHealthy) {
					b.Fatalf("refresh: %d %s (%v)", resp.StatusCode, body, err)
				}
				return took, h
			}
			get() // the cluster's client built, the connections open, as in the steady state
			var all []time.Duration
			for b.Loop() {
				for range samples {
					took, _ := get()
					all = append(all, took)
				}
			}
			b.StopTimer()
			slices.Sort(all)
			for _, p := range []int{50, 95, 99} {
				i := max(0, (p*len(all)+99)/100-1) // nearest rank
				b.ReportMetric(float64(all[i].Microseconds())/1000, fmt.Sprintf("p%d-ms", p))
			}
			b.ReportMetric(float64(len(all)), "samples")
		})
	}
}

// benchServer runs the API on a fresh store of engine with the fleet's first server registered as
// bench-1, and returns its URL, a client trusting it and a Viewer's token.
func benchServer(b *testing.B, engine string) (string, *http.Client, string) {
	b.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if engine == "postgres" {
		st, err = pgstore.Open(ctx, pgtest.NewDatabase(b), pgstore.WithMigrate())
	} else {
		st, err = sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "manager.db"), sqlitestore.WithMigrate())
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	secret := []byte("0123456789abcdef0123456789abcdef-bench")
	_, ts := serveOver(b, st, secret)
	mint := func(role auth.Role) string {
		tok, err := auth.Mint(secret, "bench", []auth.Role{role}, time.Hour, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return tok
	}
	body, err := json.Marshal(api.ClusterRequest{Name: "bench-1", Environment: "Dev", Kubeconfig: string(fleet(b).Servers[0].Kubeconfig)})
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/api/v1/clusters", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+mint(auth.Admin))
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("registering bench-1: %d %s", resp.StatusCode, out)
	}
	return ts.URL, ts.Client(), mint(auth.Viewer)
}
