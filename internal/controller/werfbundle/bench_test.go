//go:build e2e

package werfbundle_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// BenchmarkWerfBundle_Scale runs N WerfBundles against one registry on the full control plane
// and reports: time until every first Job exists, time until all are Synced, operator heap and
// RSS at steady state, API writes and registry requests in one no-op poll round, p99 reconcile
// time without registry time, and push-webhook-to-Job latency. Run with make bench
// BENCH=WerfBundle_Scale; WERFBUNDLE_BENCH_SIZES=1000,10000 picks the sizes (default 1000).
func BenchmarkWerfBundle_Scale(b *testing.B) {
	sizes := testenv.Sizes(b, "WERFBUNDLE_BENCH_SIZES", 1000)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) {
			for range b.N {
				benchScale(b, n)
			}
		})
	}
}

const benchPerNamespace = 100

// benchRun is one benchmark's bundles, registry and operator.
type benchRun struct {
	c      client.Client
	reg    *registrytest.Registry
	proxy  *registrytest.FaultProxy
	run    string
	r      *werfbundle.Reconciler
	writes *testenv.CountingClient
	// baseRSS is the process's RSS before the manager started.
	baseRSS int64
	// reconcileBase is the reconcile histogram and Job counter before the manager started.
	reconcileBase snapshot
	// requestsBase counts the process's API requests by method before the manager started.
	requestsBase map[string]float64
	start        time.Time
}

var benchMethods = []string{"GET", "LIST", "POST", "PUT", "PATCH", "DELETE"}

// requests counts the process's API requests by method (client-go's rest_client_requests_total).
func requests(b *testing.B) map[string]float64 {
	out := map[string]float64{}
	for _, m := range benchMethods {
		out[m] = testenv.MetricSum(b, "rest_client_requests_total", map[string]string{"method": m})
	}
	return out
}

// benchBundles is the bundles of one benchmark and what serves them.
type benchBundles struct {
	c     client.Client
	reg   *registrytest.Registry
	proxy *registrytest.FaultProxy
	run   string
	opNS  string
}

// createBundles creates n bundles (in namespaces of benchPerNamespace, each with its
// ServiceAccount) polling every interval against one registry, and the operator's namespace.
func createBundles(ctx context.Context, b *testing.B, cfg *rest.Config, n int, interval time.Duration) benchBundles {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	reg := registrytest.StartDistribution(b)
	for _, tag := range []string{"1.0.0", "1.1.0"} {
		registrytest.PushBundle(b, reg.Host, "bench/app", tag)
	}
	proxy := registrytest.NewFaultProxy(b, reg.URL)
	repo := proxy.Repository("bench/app")
	run := fmt.Sprintf("b%d-%d", n, time.Now().Unix()%100000)
	opNS := run + "-op"

	// Namespaces with their ServiceAccount, then the bundles, created in parallel.
	nsCount := (n + benchPerNamespace - 1) / benchPerNamespace
	mustCreate(ctx, b, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNS}})
	testenv.Parallel(b, nsCount, 32, func(i int) error {
		ns := fmt.Sprintf("%s-%d", run, i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
		return c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: ns}})
	})
	testenv.Parallel(b, n, 32, func(i int) error {
		return c.Create(ctx, &werfv1.WerfBundle{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: fmt.Sprintf("%s-%d", run, i/benchPerNamespace)},
			Spec: werfv1.WerfBundleSpec{
				Registry: werfv1.RegistrySpec{URL: repo, Insecure: true, PollInterval: &metav1.Duration{Duration: interval}},
				Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
			},
		})
	})
	return benchBundles{c: c, reg: reg, proxy: proxy, run: run, opNS: opNS}
}

// startBench creates n bundles (createBundles), then starts the operator's manager with the
// WerfBundle controller against cfg until ctx ends.
func startBench(ctx context.Context, b *testing.B, cfg *rest.Config, n int, interval time.Duration) *benchRun {
	bb := createBundles(ctx, b, cfg, n, interval)
	c, reg, proxy, run, opNS := bb.c, bb.reg, bb.proxy, bb.run, bb.opNS
	br := &benchRun{c: c, reg: reg, proxy: proxy, run: run, r: &werfbundle.Reconciler{OperatorNamespace: opNS, Logs: fakeLogs{},
		StatusDelay: werfbundle.DefaultStatusDelay}}
	runtime.GC()
	br.baseRSS = testenv.RSSBytes()
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: opNS, QPS: 0, Burst: operator.FallbackBurst, GracefulShutdownTimeout: 10 * time.Second,
		EventQPS: operator.DefaultEventQPS, EventBurst: operator.DefaultEventBurst}
	mgr, err := operator.NewManager(ctx, cfg, scheme.New(), opts, []operator.Controller{{
		Name: "werfbundle",
		Setup: func(ctx context.Context, mgr ctrl.Manager, opts operator.Options) error {
			br.writes = testenv.CountWrites(mgr.GetClient())
			br.r.Client = br.writes
			br.r.APIReader, br.r.Recorder = mgr.GetAPIReader(), opts.EventRecorder(mgr, "werfbundle-bench")
			return br.r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: benchConcurrency(), SkipNameValidation: ptr.To(true)})
		},
	}})
	if err != nil {
		b.Fatal(err)
	}
	br.reconcileBase = histogram(b)
	br.requestsBase = requests(b)
	br.start = time.Now()
	mgrCtx, stopMgr := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(mgrCtx) }()
	b.Cleanup(func() { stopMgr(); <-done })
	return br
}

func benchScale(b *testing.B, n int) {
	if os.Getenv("WERFBUNDLE_BENCH_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 4096
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	interval := 2 * time.Minute
	br := startBench(ctx, b, env.Config, n, interval)
	c, reg, proxy, run, r, writes, start, reconcileBase, baseRSS := br.c, br.reg, br.proxy, br.run, br.r, br.writes, br.start, br.reconcileBase, br.baseRSS

	created := testenv.Until(ctx, b, "every first Job exists", func() bool { return jobsCreated(b) >= reconcileBase.jobs+float64(n) })
	firstJobs := created.Sub(start)
	synced := testenv.Until(ctx, b, "every bundle is Synced", func() bool { return countPhase(b, run, werfv1.PhaseSynced) >= n })
	allSynced := synced.Sub(start)
	// Writes per bundle from nothing to Synced: the Job, the status (coalesced with the Job's end
	// when it came first), the log, the Events.
	br.reportWrites(b, "deploy-", n, br.requestsBase)

	// Steady state: a full poll round with nothing new.
	burstP99 := histogram(b).p99Since(reconcileBase)
	steadyBase := histogram(b)
	writes.Reset()
	noopRequests := requests(b)
	proxy.ResetStats()
	// The window covers every bundle's jittered interval (±10 %), so some bundles poll twice.
	pollsBase := testenv.MetricSum(b, "slipway_werfbundle_registry_polls_total", nil)
	time.Sleep(interval + interval/10 + 5*time.Second)
	polls := testenv.MetricSum(b, "slipway_werfbundle_registry_polls_total", nil) - pollsBase
	roundWrites := writes.Writes()
	br.reportWrites(b, "noop-", n, noopRequests)
	stats := proxy.Stats()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := testenv.RSSBytes()
	steadyP99 := histogram(b).p99Since(steadyBase)
	if path := os.Getenv("WERFBUNDLE_BENCH_HEAPPROFILE"); path != "" {
		testenv.WriteHeapProfile(b, path)
	}

	// Push webhook: a new tag for one bundle's repository, from the notification to its Job.
	registrytest.PushBundle(b, reg.Host, "bench/hot", "1.0.0")
	hot := &werfv1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "hot", Namespace: run + "-0"},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: proxy.Repository("bench/hot"), Insecure: true, PollInterval: &metav1.Duration{Duration: time.Hour}},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
		},
	}
	mustCreate(ctx, b, c, hot)
	testenv.Until(ctx, b, "hot is Synced", func() bool { return phaseOf(ctx, c, hot) == werfv1.PhaseSynced })
	registrytest.PushBundle(b, reg.Host, "bench/hot", "1.1.0")
	srv := receiver.New(receiver.Options{Secret: []byte("s"), Trigger: r})
	pushed := time.Now()
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader([]byte(`{"repository":"`+proxy.Repository("bench/hot")+`","tag":"1.1.0"}`)))
	req.Header.Set("Authorization", "Bearer s")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		b.Fatalf("webhook: %d %s", rec.Code, rec.Body.String())
	}
	jobAt := testenv.Until(ctx, b, "the pushed tag has a Job", func() bool {
		var jobs batchv1.JobList
		_ = c.List(ctx, &jobs, client.InNamespace(hot.Namespace), client.MatchingLabels{werfbundle.LabelBundleName: "hot"})
		for _, j := range jobs.Items {
			if j.Annotations[werfbundle.AnnotationTag] == "1.1.0" {
				return true
			}
		}
		return false
	})

	b.ReportMetric(firstJobs.Seconds(), "s-first-jobs")
	b.ReportMetric(allSynced.Seconds(), "s-all-synced")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap")
	b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
	b.ReportMetric(float64(rss-baseRSS)/(1<<20), "MiB-rss-operator")
	b.ReportMetric(float64(roundWrites)/float64(n), "writes/noop-bundle")
	b.ReportMetric(float64(stats.Total)/max(polls, 1), "registry-req/poll")
	b.ReportMetric(polls/float64(n), "polls/bundle/window")
	b.ReportMetric(float64(stats.ByStatus[304])/float64(max(stats.Total, 1)), "frac-304")
	b.ReportMetric(burstP99*1000, "ms-p99-reconcile-excl-registry-deploying")
	b.ReportMetric(steadyP99*1000, "ms-p99-reconcile-excl-registry-steady")
	b.ReportMetric(jobAt.Sub(pushed).Seconds()*1000, "ms-push-to-job")
}

// BenchmarkWerfBundle_FirstJobsOperatorOnly measures the operator alone: N bundles on a light
// control plane of its own (etcd and kube-apiserver, no controller-manager, scheduler or kwok),
// so the API server serves the operator and nothing runs the Jobs it creates. It reports the
// time until every first Job exists and the rate, the operator's share of the full benchmark's
// first-Job time, the writes per bundle by verb until then (critical-) and until every status
// records its Job (first-), and the process's RSS then. WERFBUNDLE_BENCH_SIZES picks the sizes
// (default 1000).
func BenchmarkWerfBundle_FirstJobsOperatorOnly(b *testing.B) {
	for _, n := range testenv.Sizes(b, "WERFBUNDLE_BENCH_SIZES", 1000) {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) {
			for range b.N {
				light := testenv.New(b, testenv.Light)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
				br := startBench(ctx, b, light.Config, n, time.Hour)
				created := testenv.Until(ctx, b, "every first Job exists", func() bool {
					return jobsCreated(b) >= br.reconcileBase.jobs+float64(n)
				})
				firstJobs := created.Sub(br.start)
				// The writes until the last first Job: the critical path (Jobs only, when the
				// status writes wait behind them).
				br.reportWrites(b, "critical-", n, br.requestsBase)
				now := requests(b)
				for _, m := range benchMethods {
					b.ReportMetric((now[m]-br.requestsBase[m])/float64(n), m+"/bundle")
				}
				written := br.waitStatusWritten(ctx, b, n)
				br.reportWrites(b, "first-", n, br.requestsBase)
				runtime.GC()
				rss := testenv.RSSBytes()
				if path := os.Getenv("WERFBUNDLE_BENCH_HEAPPROFILE"); path != "" {
					testenv.WriteHeapProfile(b, path)
				}
				cancel()
				b.ReportMetric(firstJobs.Seconds(), "s-first-jobs")
				b.ReportMetric(float64(n)/firstJobs.Seconds(), "jobs/s")
				b.ReportMetric(written.Sub(br.start).Seconds(), "s-status-written")
				b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
				b.ReportMetric(float64(rss-br.baseRSS)/(1<<20), "MiB-rss-operator")
			}
		})
	}
}

// BenchmarkWerfBundle_OperatorBinary runs the built operator binary (cmd/operator, under the
// operator's RBAC identity, --controllers=werfbundle and otherwise the shipped defaults) against N
// bundles on a light control plane of its own, where nothing runs the Jobs, and reports from the
// process: the time to every first Job and to every status recording its Job, its writes per
// bundle by verb until each (client-go's request counts, Events included), and its memory then
// (RSS, anonymous and file-backed, peak). WERFBUNDLE_BENCH_SIZES picks the sizes (default 1000);
// WERFBUNDLE_BENCH_OPERATOR_ARGS adds flags (e.g. --werfbundle-status-delay=0 for the status
// written with the Job).
func BenchmarkWerfBundle_OperatorBinary(b *testing.B) {
	for _, n := range testenv.Sizes(b, "WERFBUNDLE_BENCH_SIZES", 1000) {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) {
			for range b.N {
				benchBinary(b, n)
			}
		})
	}
}

func benchBinary(b *testing.B, n int) {
	light := testenv.New(b, testenv.Light)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	createBundles(ctx, b, light.Config, n, time.Hour)
	kubeconfig, err := light.InstallOperatorIdentity(ctx, filepath.Join(b.TempDir(), "operator.kubeconfig"), "werfbundle")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	p := operatorproc.Start(b, operatorproc.Binary(b), operatorproc.Options{Name: "werfbundle-bench", Kubeconfig: kubeconfig,
		Args: append([]string{"--namespace=" + controlplane.OperatorNamespace, "--controllers=werfbundle"},
			strings.Fields(os.Getenv("WERFBUNDLE_BENCH_OPERATOR_ARGS"))...)})
	p.WaitReady(ctx, b)
	scrape := func() map[string]*dto.MetricFamily {
		m, err := p.Metrics(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	var at map[string]*dto.MetricFamily
	firstJobs := testenv.Until(ctx, b, "every first Job exists", func() bool {
		at = scrape()
		return operatorproc.Sum(at, "slipway_werfbundle_jobs_created_total", map[string]string{"kind": "apply"}) >= float64(n)
	}).Sub(start)
	reportProcessWrites(b, "critical-", n, at)
	written := testenv.Until(ctx, b, "every bundle's status records its first Job", func() bool {
		at = scrape()
		return operatorproc.Sum(at, "rest_client_requests_total", map[string]string{"method": "PATCH"}) >= float64(n)
	}).Sub(start)
	reportProcessWrites(b, "first-", n, at)
	mem, err := p.Memory()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(firstJobs.Seconds(), "s-first-jobs")
	b.ReportMetric(float64(n)/firstJobs.Seconds(), "jobs/s")
	b.ReportMetric(written.Seconds(), "s-status-written")
	b.ReportMetric(float64(mem.RSS)/(1<<20), "MiB-rss")
	b.ReportMetric(float64(mem.Anon)/(1<<20), "MiB-rss-anon")
	b.ReportMetric(float64(mem.File)/(1<<20), "MiB-rss-file")
	b.ReportMetric(float64(mem.Peak)/(1<<20), "MiB-rss-peak")
}

// reportProcessWrites reports the operator process's writes per bundle by verb from its client-go
// request counts: POST (Jobs, and Events), PATCH (statuses, and Event series), PUT, DELETE.
func reportProcessWrites(b *testing.B, prefix string, n int, m map[string]*dto.MetricFamily) {
	for _, verb := range []string{"POST", "PATCH", "PUT", "DELETE"} {
		b.ReportMetric(operatorproc.Sum(m, "rest_client_requests_total", map[string]string{"method": verb})/float64(n), prefix+verb+"/bundle")
	}
}

func mustCreate(ctx context.Context, b *testing.B, c client.Client, o client.Object) {
	if err := c.Create(ctx, o); err != nil {
		b.Fatal(err)
	}
}

// countPhase counts the run's bundles in phase from the operator's phase gauge, so that waiting
// does not list every bundle (which would inflate the heap this benchmark measures).
func countPhase(b *testing.B, run string, phase werfv1.Phase) int {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() != "slipway_werfbundle_phase" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if strings.HasPrefix(labels["namespace"], run+"-") && labels["phase"] == string(phase) && m.GetGauge().GetValue() == 1 {
				n++
			}
		}
	}
	return n
}

func phaseOf(ctx context.Context, c client.Client, wb *werfv1.WerfBundle) werfv1.Phase {
	got := &werfv1.WerfBundle{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(wb), got); err != nil {
		return ""
	}
	return got.Status.Phase
}

// jobsCreated reads slipway_werfbundle_jobs_created_total{kind="apply"}.
func jobsCreated(b *testing.B) float64 {
	return histogram(b).jobs
}

type snapshot struct {
	jobs    float64
	buckets []*dto.Bucket
	count   uint64
}

func histogram(b *testing.B) snapshot {
	var s snapshot
	m := &dto.Metric{}
	if err := werfbundle.ReconcileWithoutRegistry.Write(m); err != nil {
		b.Fatal(err)
	}
	s.buckets = m.GetHistogram().GetBucket()
	s.count = m.GetHistogram().GetSampleCount()
	s.jobs = werfbundle.JobsCreatedTotal()
	return s
}

// p99Since estimates the 99th percentile (bucket upper bound) of observations since base.
func (s snapshot) p99Since(base snapshot) float64 {
	total := s.count - base.count
	if total == 0 {
		return 0
	}
	target := uint64(float64(total) * 0.99)
	bounds := make([]float64, len(s.buckets))
	for i, bk := range s.buckets {
		bounds[i] = bk.GetUpperBound()
	}
	sort.Float64s(bounds)
	for i, bk := range s.buckets {
		c := bk.GetCumulativeCount()
		if i < len(base.buckets) {
			c -= base.buckets[i].GetCumulativeCount()
		}
		if c >= target {
			return bk.GetUpperBound()
		}
	}
	return bounds[len(bounds)-1]
}

// benchConcurrency is the controller's MaxConcurrentReconciles in the benchmarks:
// WERFBUNDLE_BENCH_CONCURRENCY, default the operator's --werfbundle-concurrency.
func benchConcurrency() int {
	if n, err := strconv.Atoi(os.Getenv("WERFBUNDLE_BENCH_CONCURRENCY")); err == nil && n > 0 {
		return n
	}
	return werfbundle.DefaultConcurrency
}

// reportWrites reports the writes per bundle by verb and kind since the counters' last reset, with
// prefix ("first-" or "noop-"): the controller's from its client, the Events' as the process's
// other writes (client-go's request counts less the controller's), so POST Event covers the
// events/v1 recorder's POSTs and PATCHes.
func (br *benchRun) reportWrites(b *testing.B, prefix string, n int, requestsBase map[string]float64) map[string]float64 {
	// The deploy's own writes are printed also when there were none (a no-op round).
	out := map[string]float64{"POST Job": 0, "PATCH WerfBundle/status": 0}
	var controller int64
	for k, v := range br.writes.ByVerb() {
		out[k] = float64(v) / float64(n)
		controller += v
	}
	now := requests(b)
	var all float64
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		all += now[m] - requestsBase[m]
	}
	out["Event-writes"] = max(all-float64(controller), 0) / float64(n)
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.ReportMetric(out[k], prefix+strings.ReplaceAll(strings.ReplaceAll(k, " ", "-"), "/", "-")+"/bundle")
	}
	return out
}

// waitStatusWritten waits until every bundle's status recorded its first Job: the deferred
// status writes (one per bundle) are done.
func (br *benchRun) waitStatusWritten(ctx context.Context, b *testing.B, n int) time.Time {
	return testenv.Until(ctx, b, "every bundle's status records its first Job", func() bool {
		return br.writes.ByVerb()["PATCH WerfBundle/status"] >= int64(n)
	})
}
