//go:build e2e

package main_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// BenchmarkOperator_Shards runs the operator binary over N WerfBundles twice on one run, each time
// on a light control plane of its own (etcd and kube-apiserver; nothing runs the Jobs) with the
// bundles in namespaces of SHARD_BENCH_PER_NAMESPACE (default 10: bundles are hashed by namespace,
// so a shard's share is whole namespaces): first one replica (--shards=1, as shipped), then S
// shards started together. It reports, for each, the time from the processes' start to every
// bundle's first Job (labelled for its shard, for the shards) and the RSS of each process then;
// for the shards also the time until every bundle of a SIGKILLed shard (not the leader, which
// would add a leader-election takeover) is on the others with its Job in view (about a Lease
// duration, 15 s as shipped, plus the relabelling), and the time until a joining shard holds its
// share. SHARD_BENCH_BUNDLES (default 2000) and SHARD_BENCH_SHARDS (default 3) set N and S. Every
// poll lists the bundles and Jobs from the API server, once every SHARD_BENCH_POLL (default 1s).
func BenchmarkOperator_Shards(b *testing.B) {
	n := envInt(b, "SHARD_BENCH_BUNDLES", 2000)
	shards := envInt(b, "SHARD_BENCH_SHARDS", 3)
	perNS := envInt(b, "SHARD_BENCH_PER_NAMESPACE", 10)
	poll := time.Second
	if v := os.Getenv("SHARD_BENCH_POLL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("SHARD_BENCH_POLL: %v", err)
		}
		poll = d
	}
	b.Run(fmt.Sprintf("bundles=%d/shards=%d", n, shards), func(b *testing.B) {
		for range b.N {
			benchOneReplica(b, n, perNS, poll)
			benchShards(b, n, shards, perNS, poll)
		}
	})
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 1 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return i
}

func benchWorld(b *testing.B, prefix string, n, perNS int) (*shardWorld, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Minute)
	cp := testenv.New(b, testenv.Light)
	w := newShardWorld(ctx, b, cp, prefix, "--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s",
		"--leader-election-retry-period=2s")
	w.bundles(b, n, perNS)
	return w, func() {
		cancel()
		if err := cp.Stop(); err != nil {
			b.Logf("stopping the control plane: %v", err)
		}
	}
}

func rssMiB(b *testing.B, p *operatorproc.Process) float64 {
	m, err := p.Memory()
	if err != nil {
		b.Fatal(err)
	}
	return float64(m.RSS) / (1 << 20)
}

func benchOneReplica(b *testing.B, n, perNS int, poll time.Duration) {
	w, stop := benchWorld(b, "one", n, perNS)
	defer stop()
	start := time.Now()
	p := w.start(b, "one", 1)
	w.settle(b, n, "the replica made every first Job", poll)
	took := time.Since(start)
	b.ReportMetric(took.Seconds(), "s-first-jobs-1-replica")
	b.ReportMetric(rssMiB(b, p), "MiB-rss-1-replica")
	b.Logf("one replica: every first Job in %s, RSS %.0f MiB", took, rssMiB(b, p))
	if err := p.Stop(w.ctx); err != nil {
		b.Errorf("stopping the replica: %v", err)
	}
}

func benchShards(b *testing.B, n, shards, perNS int, poll time.Duration) {
	w, stop := benchWorld(b, "sharded", n, perNS)
	defer stop()
	start := time.Now()
	for i := range shards {
		w.start(b, fmt.Sprintf("s%d", i), shards)
	}
	w.settle(b, n, "every bundle has its first Job on its shard", poll)
	took := time.Since(start)
	b.ReportMetric(took.Seconds(), "s-first-jobs-shards")
	sum, peak := 0.0, 0.0
	for i := range shards {
		rss := rssMiB(b, w.shards[fmt.Sprintf("s%d", i)])
		sum, peak = sum+rss, max(peak, rss)
		b.Logf("shard s%d: RSS %.0f MiB", i, rss)
	}
	b.ReportMetric(peak, "MiB-rss-shard-max")
	b.ReportMetric(sum, "MiB-rss-shards-sum")
	b.Logf("%d shards: every first Job in %s; RSS max %.0f MiB, sum %.0f MiB", shards, took, peak, sum)

	leader := w.leader(b)
	victim := "s0"
	if victim == leader {
		victim = "s1"
	}
	if err := w.shards[victim].Kill(); err != nil {
		b.Fatal(err)
	}
	killed := w.settle(b, n, "the killed shard's bundles are on the others with their Jobs", poll)
	b.ReportMetric(killed.Seconds(), "s-rebalance-kill")
	w.start(b, "joiner", shards)
	joined := w.settle(b, n, "the joining shard holds its share with its Jobs", poll)
	b.ReportMetric(joined.Seconds(), "s-rebalance-join")
	b.Logf("SIGKILL of %s (Lease 15s): rebalanced in %s; a shard joined: rebalanced in %s", victim, killed, joined)
}
