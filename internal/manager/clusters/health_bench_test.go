package clusters

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkHealthRound measures one health round (GET /version and a list of one namespace per
// cluster, as the manager's ServiceAccount, 10 clusters at a time, each result stored in SQLite)
// over rows registered clusters backed by servers real kube-apiservers sharing one etcd. Rows
// beyond the servers are the same servers registered under other names (each row still has its
// own credentials, client and checks). It reports p50 and p99 round times and the memory of one
// kube-apiserver and of the etcd.
//
//	SLIPWAY_BENCH_CLUSTER_SERVERS=8 SLIPWAY_BENCH_CLUSTER_ROWS=8,100 \
//	  go test ./internal/manager/clusters -run '^$' -bench HealthRound -benchtime 30x
func BenchmarkHealthRound(b *testing.B) {
	servers := testenv.Sizes(b, "SLIPWAY_BENCH_CLUSTER_SERVERS", 8)[0]
	logDir, err := os.MkdirTemp("", "slipway-clusters-bench-")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f, err := controlplane.StartFleet(ctx, controlplane.FleetOptions{Servers: servers, LogDir: logDir})
	if err != nil {
		b.Fatalf("starting %d kube-apiservers: %v (logs in %s)", servers, err, logDir)
	}
	b.Cleanup(func() {
		if err := f.Stop(); err != nil {
			b.Errorf("stopping the fleet: %v", err)
		}
		_ = os.RemoveAll(logDir)
	})

	for _, rows := range testenv.Sizes(b, "SLIPWAY_BENCH_CLUSTER_ROWS", servers, 100) {
		b.Run(fmt.Sprintf("servers=%d/clusters=%d", servers, rows), func(b *testing.B) {
			st := benchStore(b)
			m, err := New(Config{Store: st, Keyring: mustKeyring(b, newKeyLine(b)), Logger: discardLogger()})
			if err != nil {
				b.Fatal(err)
			}
			testenv.Parallel(b, rows, 4, func(i int) error {
				_, err := m.Register(ctx, RegisterParams{Name: fmt.Sprintf("c%03d", i), Environment: store.EnvironmentDev,
					Kubeconfig: f.Servers[i%servers].Kubeconfig})
				return err
			})
			// One round first: clients built, connections open, as in the steady state.
			if r := m.RunRound(ctx); r.Err != nil {
				b.Fatal(r.Err)
			}
			var rounds []time.Duration
			b.ResetTimer()
			for b.Loop() {
				r := m.RunRound(ctx)
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				for _, res := range r.Results {
					if res.Health != store.HealthHealthy || res.Err != nil {
						b.Fatalf("%s: %s %s %v", res.Cluster, res.Health, res.Reason, res.Err)
					}
				}
				rounds = append(rounds, r.Duration)
			}
			b.StopTimer()
			slices.Sort(rounds)
			b.ReportMetric(ms(rounds[len(rounds)/2]), "p50-ms")
			b.ReportMetric(ms(rounds[min(len(rounds)-1, len(rounds)*99/100)]), "p99-ms")
			var total int64
			for _, s := range f.Servers {
				rss, err := s.RSS()
				if err != nil {
					b.Fatal(err)
				}
				total += rss
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
