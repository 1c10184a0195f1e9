//go:build e2e

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/storetest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkOperatorList measures GET /api/v1/operators (the default page: 100 operators with
// their versions) against the built binary, run with its shipped defaults plus only what it
// needs (a database, the JWT secret, a key, --insecure-http; --address and --metrics-address on
// free ports), with 500 operators (three versions each) and 100 clusters seeded into the store
// before it starts. Requests go one at a time over one kept-alive connection; the design's rate
// limit (60/min per user) stays on, so each run of 50 requests uses its own user. It reports
// p50/p99 latency and the manager's RSS after the run.
//
//	SLIPWAY_BENCH_REQUESTS=2000 go test -tags e2e ./cmd/manager -run '^$' -bench OperatorList
func BenchmarkOperatorList(b *testing.B) {
	requests := testenv.Sizes(b, "SLIPWAY_BENCH_REQUESTS", 2000)[0]
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			d := newDeployment(b, engine)
			if r := d.run("migrate"); r.code != 0 {
				b.Fatalf("manager migrate: %s", r.stderr)
			}
			st := d.openStore()
			storetest.Seed(context.Background(), b, st, 500, 100)
			_ = st.Close()

			p := d.serve("--insecure-http")
			tokens := make([]string, requests/50+2)
			for i := range tokens {
				tokens[i] = d.token(fmt.Sprintf("bench-%d", i), auth.Viewer)
			}
			get := func(i int) time.Duration {
				start := time.Now()
				req, _ := http.NewRequest("GET", p.URL+"/api/v1/operators", nil)
				req.Header.Set("Authorization", "Bearer "+tokens[i/50])
				resp, err := p.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if resp.StatusCode != http.StatusOK || n < 100*100 {
					b.Fatalf("GET /api/v1/operators: %d, %d bytes", resp.StatusCode, n)
				}
				return took
			}
			for i := range 50 { // warm: connections, caches, the runtime's heap
				get(i)
			}
			var lat []time.Duration
			b.ResetTimer()
			for b.Loop() {
				for i := range requests {
					lat = append(lat, get(50+i))
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat)
			rss, err := p.RSS()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
		})
	}
}

// BenchmarkHealthRound measures the built binary's cluster health rounds over 100 registered
// clusters backed by servers real kube-apiservers over one etcd (default 20, about 5.5 GiB; the rest are rows
// registered under other names against the same servers, each with its own credentials, client
// and checks). The clusters are registered through the clusters package with the deployment's
// keyring before the binary starts (the design's 5/min registration limit would take 20 minutes
// through the API). The binary runs with its defaults plus --log-level=debug (it logs each round
// with its duration at debug level) and --cluster-health-interval=1s (the default 60 s would give
// three rounds in three minutes); the round durations are read from its log. The first round
// (clients built, tokens opened) is not counted. It reports p50/p99 of a round, the manager's RSS,
// and the memory of one kube-apiserver and of the etcd.
//
//	SLIPWAY_BENCH_CLUSTER_SERVERS=20 SLIPWAY_BENCH_ROUNDS=30 \
//	  go test -tags e2e ./cmd/manager -run '^$' -bench HealthRound
func BenchmarkHealthRound(b *testing.B) {
	servers := testenv.Sizes(b, "SLIPWAY_BENCH_CLUSTER_SERVERS", 20)[0]
	rounds := testenv.Sizes(b, "SLIPWAY_BENCH_ROUNDS", 30)[0]
	const rows = 100
	logDir, err := os.MkdirTemp("", "slipway-manager-bench-fleet-")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	f, err := controlplane.StartFleet(ctx, controlplane.FleetOptions{Servers: servers, LogDir: logDir})
	if err != nil {
		b.Fatalf("starting %d kube-apiservers: %v (logs in %s)", servers, err, logDir)
	}
	b.Logf("%d kube-apiservers over one etcd started in %s", servers, time.Since(started).Round(time.Second))
	b.Cleanup(func() {
		if err := f.Stop(); err != nil {
			b.Errorf("stopping the fleet: %v", err)
		}
		_ = os.RemoveAll(logDir)
	})

	for _, engine := range engines {
		b.Run(fmt.Sprintf("%s/servers=%d/clusters=%d", engine, servers, rows), func(b *testing.B) {
			d := newDeployment(b, engine)
			if r := d.run("migrate"); r.code != 0 {
				b.Fatalf("manager migrate: %s", r.stderr)
			}
			registerClusters(ctx, b, d, f, rows)

			p := d.serve("--insecure-http", "--log-level=debug", "--cluster-health-interval=1s")
			var durations []time.Duration
			b.ResetTimer()
			for b.Loop() {
				durations = append(durations, waitRounds(b, p, rows, rounds+1)[1:]...)
			}
			b.StopTimer()
			reportPercentiles(b, durations)
			rss, err := p.RSS()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
			var total int64
			for _, s := range f.Servers {
				r, err := s.RSS()
				if err != nil {
					b.Fatal(err)
				}
				total += r
			}
			etcd, err := f.EtcdRSS()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(total)/float64(servers)/(1<<20), "MiB/apiserver")
			b.ReportMetric(float64(etcd)/(1<<20), "MiB-etcd")
		})
	}
}

// registerClusters registers rows clusters (c000, c001, …) over the fleet's servers into the
// deployment's store with its keyring, as the binary would.
func registerClusters(ctx context.Context, b *testing.B, d *deployment, f *controlplane.Fleet, rows int) {
	b.Helper()
	keyring, err := clusters.ParseKeyring([]byte(d.keys))
	if err != nil {
		b.Fatal(err)
	}
	st := d.openStore()
	defer func() { _ = st.Close() }()
	cm, err := clusters.New(clusters.Config{Store: st, Keyring: keyring, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	testenv.Parallel(b, rows, 4, func(i int) error {
		_, err := cm.Register(ctx, clusters.RegisterParams{Name: fmt.Sprintf("c%03d", i), Environment: store.EnvironmentDev,
			Kubeconfig: f.Servers[i%len(f.Servers)].Kubeconfig})
		return err
	})
}

// waitRounds reads the process's log until it has logged n health rounds and returns their
// durations; it fails when a round does not cover every cluster or finds one unhealthy.
func waitRounds(b *testing.B, p *proc, clusters, n int) []time.Duration {
	b.Helper()
	deadline := time.Now().Add(time.Duration(n)*5*time.Second + time.Minute)
	offset := len(p.stderr.Bytes())
	var out []time.Duration
	for len(out) < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d health rounds logged in time", len(out), n)
		}
		time.Sleep(200 * time.Millisecond)
		data := p.stderr.Bytes()[offset:]
		end := bytes.LastIndexByte(data, '\n')
		if end < 0 {
			continue
		}
		offset += end + 1 // a partial last line is read next time
		for _, line := range bytes.Split(data[:end], []byte("\n")) {
			if !bytes.Contains(line, []byte(`"clusters: Health round"`)) {
				continue
			}
			var r struct {
				Clusters, Unhealthy int
				Duration            time.Duration
			}
			if err := json.Unmarshal(line, &r); err != nil {
				b.Fatalf("health round line %s: %v", line, err)
			}
			if r.Clusters != clusters || r.Unhealthy != 0 {
				b.Fatalf("a health round over %d clusters with %d unhealthy, want %d healthy: %s", r.Clusters, r.Unhealthy, clusters, line)
			}
			out = append(out, r.Duration)
		}
	}
	return out[:n]
}

// reportPercentiles reports p50-ms and p99-ms of samples.
func reportPercentiles(b *testing.B, samples []time.Duration) {
	b.Helper()
	if len(samples) == 0 {
		b.Fatal("no samples")
	}
	slices.Sort(samples)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(samples[len(samples)/2]), "p50-ms")
	b.ReportMetric(ms(samples[min(len(samples)-1, len(samples)*99/100)]), "p99-ms")
	b.Logf("%d samples: p50 %s, p99 %s, max %s", len(samples), samples[len(samples)/2],
		samples[min(len(samples)-1, len(samples)*99/100)], samples[len(samples)-1])
}
