//go:build e2e

package webapp_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkWebApp_Scale creates N WebApps of one replica (100 per namespace) on a fresh full
// control plane, then starts the operator's manager in the benchmark process and reports: seconds
// until every WebApp is Ready (pods available under kwok), API writes and Events per WebApp to
// get there, writes in one steady-state resync round (every WebApp reconciled once more; target
// 0), and the operator's heap and RSS growth at steady state. Run with
// make bench BENCH=WebApp_Scale TEST_PKGS=./internal/controller/webapp/; WEBAPP_BENCH_SIZES=1000,5000
// picks the sizes (default 1000).
func BenchmarkWebApp_Scale(b *testing.B) {
	sizes := testenv.Sizes(b, "WEBAPP_BENCH_SIZES", 1000)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("webapps=%d", n), func(b *testing.B) {
			for range b.N {
				benchScale(b, n)
			}
		})
	}
}

const benchPerNamespace = 100

func benchScale(b *testing.B, n int) {
	full := testenv.New(b, testenv.Full)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	cfg := rest.CopyConfig(full.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	addServiceCIDR(ctx, b, c)
	run := fmt.Sprintf("wb%d", n)
	testenv.Parallel(b, (n+benchPerNamespace-1)/benchPerNamespace, 32, func(i int) error {
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", run, i)}})
	})
	testenv.Parallel(b, n, 32, func(i int) error {
		return c.Create(ctx, &webappv1.WebApp{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: fmt.Sprintf("%s-%d", run, i/benchPerNamespace)},
			Spec:       webappv1.WebAppSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](1), Port: 8080, HealthCheckPath: "/"},
		})
	})

	var writes *testenv.CountingClient
	var eventsSent *testenv.CountingRecorder
	runtime.GC()
	baseRSS := testenv.RSSBytes()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	readyBase := webapp.PhaseCount(webappv1.PhaseReady)
	appliedBase := counter(b, "slipway_webapp_applies_total", "kind", "Deployment")
	mgrCtx, stopMgr := context.WithCancel(ctx)
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", QPS: 1000, Burst: 2000, GracefulShutdownTimeout: 10 * time.Second}
	mgr, err := operator.NewManager(mgrCtx, full.Config, scheme.New(), opts, []operator.Controller{{
		Name: "webapp",
		Setup: func(_ context.Context, mgr ctrl.Manager, _ operator.Options) error {
			writes, eventsSent = testenv.CountWrites(mgr.GetClient()), testenv.CountEvents(mgr.GetEventRecorder("webapp-bench"))
			r := &webapp.Reconciler{
				Client:   writes,
				Recorder: eventsSent,
			}
			return r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 16, SkipNameValidation: ptr.To(true)})
		},
	}})
	if err != nil {
		b.Fatal(err)
	}
	start, startCPU := time.Now(), testenv.CPUTime()
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(mgrCtx) }()
	defer func() { stopMgr(); <-done }()

	// Waiting reads the operator's metrics rather than listing WebApps, which would inflate the
	// heap this benchmark measures.
	allApplied := testenv.Until(ctx, b, "every Deployment is applied", func() bool {
		return counter(b, "slipway_webapp_applies_total", "kind", "Deployment")-appliedBase >= float64(n)
	}).Sub(start)
	allReady := testenv.Until(ctx, b, "every WebApp is Ready", func() bool {
		return webapp.PhaseCount(webappv1.PhaseReady)-readyBase >= float64(n)
	}).Sub(start)
	createWrites, createEvents, createCPU := writes.Writes(), eventsSent.Events(), testenv.CPUTime()-startCPU

	// Steady state: one resync round, every WebApp reconciled at least once more.
	writes.Reset()
	roundBase := reconciles(b)
	roundStart := time.Now()
	testenv.Until(ctx, b, "one resync round", func() bool { return reconciles(b) >= roundBase+float64(n) })
	roundWrites := writes.Writes()
	round := time.Since(roundStart)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := testenv.RSSBytes()
	b.ReportMetric(allApplied.Seconds(), "s-all-applied")
	b.ReportMetric(allReady.Seconds(), "s-all-ready")
	b.ReportMetric(createCPU.Seconds(), "s-cpu-operator-to-ready")
	b.ReportMetric(float64(createWrites)/float64(n), "writes/webapp-to-ready")
	b.ReportMetric(float64(createEvents)/float64(n), "events/webapp-to-ready")
	b.ReportMetric(float64(roundWrites), "writes/resync-round")
	b.ReportMetric(round.Seconds(), "s-resync-round")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap")
	b.ReportMetric(float64(int64(ms.HeapInuse)-int64(base.HeapInuse))/(1<<20), "MiB-heap-growth")
	b.ReportMetric(float64(rss-baseRSS)/(1<<20), "MiB-rss-growth")
}

// addServiceCIDR gives the control plane room for the benchmark's Services: its apiserver
// allocates cluster IPs from 10.0.0.0/24 only (envtest's default), 254 addresses. A ServiceCIDR
// (networking.k8s.io/v1) adds a /16.
func addServiceCIDR(ctx context.Context, b *testing.B, c client.Client) {
	cidr := &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp-bench"},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16"}},
	}
	if err := c.Create(ctx, cidr); err != nil {
		b.Fatal(err)
	}
	testenv.Until(ctx, b, "the ServiceCIDR is Ready", func() bool {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cidr), cidr); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(cidr.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
	})
}
