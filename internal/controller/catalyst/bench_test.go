//go:build e2e

package catalyst_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkEnvironment_Manifest measures Environments of type manifest whose image is in the
// registry, on the full control plane with the operator under its generated RBAC:
//
//   - single: environments created one at a time, CR created -> Ready (p50, p90);
//   - burst: CATALYST_BENCH_SIZES (default 200; a comma-separated list runs several) created at once: time until all are Ready, and
//     the p50/p90 of each one's time to Ready;
//   - cleanup: all of them deleted at once: time until every Environment is gone, which is after
//     its namespace is gone.
//
// Run with make bench BENCH=Environment TEST_PKGS=./internal/controller/catalyst/.
func BenchmarkEnvironment_Manifest(b *testing.B) {
	for _, n := range testenv.Sizes(b, "CATALYST_BENCH_SIZES", 200) {
		b.Run(fmt.Sprintf("burst=%d", n), func(b *testing.B) {
			for range b.N {
				benchManifest(b, 20, n)
			}
		})
	}
}

func benchManifest(b *testing.B, single, burst int) {
	f := newFixture(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	f.ctx = ctx
	f.pushImage(f.head)
	p := f.project()
	f.create(p)
	f.concurrency = benchConcurrency()
	f.start()
	f.waitProjectReady(p)

	w := newEnvWatcher(b, ctx, f.projNS)
	defer w.stop()

	// One at a time.
	var singles []time.Duration
	for i := range single {
		e := f.environment(fmt.Sprintf("single-%d", i), f.head)
		start := time.Now()
		f.createEnvironment(e)
		singles = append(singles, w.waitReady(e.Name).Sub(start))
	}

	// A burst, created at once.
	beforeBurst := reconcileCount(b)
	f.writes.Reset()
	names := make([]string, burst)
	created := make([]time.Time, burst)
	start := time.Now()
	testenv.Parallel(b, burst, 32, func(i int) error {
		names[i] = fmt.Sprintf("burst-%d", i)
		created[i] = time.Now()
		return f.c.Create(ctx, f.environment(names[i], f.head))
	})
	var each []time.Duration
	var last time.Time
	for i, n := range names {
		at := w.waitReady(n)
		each = append(each, at.Sub(created[i]))
		if at.After(last) {
			last = at
		}
	}
	allReady := last.Sub(start)
	burstReconciles := reconcileCount(b) - beforeBurst
	burstWrites := f.writes.Writes()

	// Cleanup of every burst environment at once.
	start = time.Now()
	testenv.Parallel(b, burst, 32, func(i int) error {
		e := &catalystv1alpha1.Environment{}
		e.Namespace, e.Name = f.projNS, names[i]
		return client.IgnoreNotFound(f.c.Delete(ctx, e))
	})
	for _, n := range names {
		w.waitGone(n)
	}
	cleanup := time.Since(start)
	cleanupReconciles := reconcileCount(b) - beforeBurst - burstReconciles
	var left corev1.NamespaceList
	if err := f.c.List(ctx, &left, client.MatchingLabels{catalyst.LabelEnvironmentNamespace: f.projNS}); err != nil {
		b.Fatal(err)
	}
	for _, ns := range left.Items {
		if strings.HasPrefix(ns.Labels[naming.LabelEnvironment], "burst-") {
			b.Errorf("namespace %s outlived its Environment", ns.Name)
		}
	}

	p50s, p90s := percentile(singles, 50), percentile(singles, 90)
	p50b, p90b := percentile(each, 50), percentile(each, 90)
	b.ReportMetric(p50s.Seconds(), "single-p50-s")
	b.ReportMetric(p90s.Seconds(), "single-p90-s")
	b.ReportMetric(allReady.Seconds(), "burst-all-ready-s")
	b.ReportMetric(p50b.Seconds(), "burst-p50-s")
	b.ReportMetric(p90b.Seconds(), "burst-p90-s")
	b.ReportMetric(cleanup.Seconds(), "burst-cleanup-s")
	b.Logf("single (n=%d): p50 %s, p90 %s; burst of %d: all Ready after %s (each p50 %s, p90 %s); cleanup of %d: %s",
		single, p50s.Round(time.Millisecond), p90s.Round(time.Millisecond), burst, allReady.Round(time.Millisecond),
		p50b.Round(time.Millisecond), p90b.Round(time.Millisecond), burst, cleanup.Round(time.Millisecond))
	b.Logf("Environment reconciles: %.1f per environment from creation to Ready in the burst, %.1f per environment in its cleanup; "+
		"%.1f writes per environment from creation to Ready (the deploy engine's aside)",
		float64(burstReconciles)/float64(burst), float64(cleanupReconciles)/float64(burst), float64(burstWrites)/float64(burst))
	b.ReportMetric(float64(burstWrites)/float64(burst), "writes/env")
	b.Logf("%s", histogramSummary(b, "slipway_catalyst_reconcile_duration_seconds", "slipway_catalyst_deploy_duration_seconds"))
	b.Logf("deploys %v, git fetches %v fetched / %v cached, registry checks %v found",
		catalyst.CounterValue("deploys", "succeeded"), catalyst.CounterValue("gitFetches", "fetched"),
		catalyst.CounterValue("gitFetches", "cached"), catalyst.CounterValue("registryChecks", "found"))
}

// envWatcher records, from a watch, when each Environment was first seen Ready and when it was
// deleted. An API server under load closes slow watches: the watcher then lists (recording what
// the list shows) and watches again from there.
type envWatcher struct {
	mu    sync.Mutex
	ready map[string]time.Time
	gone  map[string]time.Time
	seen  map[string]bool
	cond  *sync.Cond
	b     testing.TB
	ctx   context.Context
	stopc chan struct{}
}

func newEnvWatcher(b testing.TB, ctx context.Context, ns string) *envWatcher {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	w := &envWatcher{ready: map[string]time.Time{}, gone: map[string]time.Time{}, seen: map[string]bool{}, b: b, ctx: ctx,
		stopc: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go func() {
		for ctx.Err() == nil {
			select {
			case <-w.stopc:
				return
			default:
			}
			var list catalystv1alpha1.EnvironmentList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			now := time.Now()
			w.mu.Lock()
			present := map[string]bool{}
			for i := range list.Items {
				present[list.Items[i].Name] = true
				w.record(&list.Items[i], now)
			}
			for n := range w.seen {
				if _, ok := w.gone[n]; !ok && !present[n] {
					w.gone[n] = now
				}
			}
			w.cond.Broadcast()
			w.mu.Unlock()
			wi, err := c.Watch(ctx, &catalystv1alpha1.EnvironmentList{}, client.InNamespace(ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
			if err != nil {
				continue
			}
			w.consume(wi)
		}
	}()
	go func() {
		<-ctx.Done()
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	}()
	return w
}

func (w *envWatcher) consume(wi watch.Interface) {
	defer wi.Stop()
	for {
		select {
		case <-w.stopc:
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			e, isEnv := ev.Object.(*catalystv1alpha1.Environment)
			if !isEnv {
				return // an error event: list again
			}
			now := time.Now()
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				w.gone[e.Name] = now
			} else {
				w.record(e, now)
			}
			w.cond.Broadcast()
			w.mu.Unlock()
		}
	}
}

// record notes e as seen, and Ready when it is. Called with mu held.
func (w *envWatcher) record(e *catalystv1alpha1.Environment, now time.Time) {
	w.seen[e.Name] = true
	if e.Status.Phase == catalystv1alpha1.PhaseReady && e.Status.ObservedGeneration == e.Generation {
		if _, ok := w.ready[e.Name]; !ok {
			w.ready[e.Name] = now
		}
	}
}

func (w *envWatcher) wait(m map[string]time.Time, name, what string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if t, ok := m[name]; ok {
			return t
		}
		if w.ctx.Err() != nil {
			w.b.Fatalf("timed out waiting until %s is %s", name, what)
		}
		w.cond.Wait()
	}
}

func (w *envWatcher) waitReady(name string) time.Time { return w.wait(w.ready, name, "Ready") }
func (w *envWatcher) waitGone(name string) time.Time  { return w.wait(w.gone, name, "gone") }
func (w *envWatcher) stop()                           { close(w.stopc) }

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// histogramSummary reports count, mean and sum of the named histograms from the controller
// metrics registry.
func histogramSummary(b testing.TB, names ...string) string {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, fam := range families {
		if !slices.Contains(names, fam.GetName()) {
			continue
		}
		for _, m := range fam.GetMetric() {
			h := m.GetHistogram()
			label := ""
			for _, l := range m.GetLabel() {
				label += l.GetName() + "=" + l.GetValue()
			}
			if h.GetSampleCount() == 0 {
				continue
			}
			out = append(out, fmt.Sprintf("%s{%s}: n=%d mean=%.3fs sum=%.1fs", fam.GetName(), label, h.GetSampleCount(),
				h.GetSampleSum()/float64(h.GetSampleCount()), h.GetSampleSum()))
		}
	}
	return strings.Join(out, "; ")
}

// benchConcurrency is CATALYST_BENCH_CONCURRENCY, else the operator's default.
func benchConcurrency() int {
	if n, err := strconv.Atoi(os.Getenv("CATALYST_BENCH_CONCURRENCY")); err == nil && n > 0 {
		return n
	}
	return catalyst.DefaultConcurrency
}

// reconcileCount is how many Environment reconciles the controller has run in this process.
func reconcileCount(b testing.TB) uint64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != "slipway_catalyst_reconcile_duration_seconds" {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == "Environment" {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
