//go:build e2e

package main_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// BenchmarkOperator_AsShipped runs the built operator binary as users run it: a separate process
// with its default flags, under its RBAC identity, on a light control plane of its own (etcd and
// kube-apiserver; nothing runs the Jobs) beside a registry with 10 semver tags, with N
// WerfBundles in namespaces of 100 created before it starts. It reports the time from the
// process's start to every bundle's first Job (s-first-jobs) and to the first one (s-to-one-job:
// start-up, cache sync, leader election), the operator's RSS then, its peak
// (VmHWM) and its anonymous and file-backed parts (the latter mostly the binary's own mapped
// pages), the Go heap in use, the operator's CPU time, and its API requests per bundle by method (client-go's
// rest_client_requests_total). The only flags besides the defaults are the harness's (free ports,
// plain-HTTP metrics for the scrape, the webhook certificate mirrored into a directory, as the
// mounted Secret is in a cluster); OPERATOR_BENCH_FLAGS adds more, e.g. "--kube-api-qps=50" to
// measure a client-side limit. OPERATOR_BENCH_SIZES picks the sizes (default 1000).
func BenchmarkOperator_AsShipped(b *testing.B) {
	bin := operatorproc.Binary(b)
	flags := strings.Fields(os.Getenv("OPERATOR_BENCH_FLAGS"))
	for _, n := range testenv.Sizes(b, "OPERATOR_BENCH_SIZES", 1000) {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) {
			for range b.N {
				benchAsShipped(b, bin, n, flags)
			}
		})
	}
}

const (
	benchPerNamespace = 100
	benchTags         = 10
)

var benchMethods = []string{"GET", "LIST", "POST", "PUT", "PATCH", "DELETE"}

func benchAsShipped(b *testing.B, bin string, n int, flags []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	light := testenv.New(b, testenv.Light)
	c, kubeconfig := harness(ctx, b, light)
	reg := registrytest.StartDistribution(b)
	for i := range benchTags {
		registrytest.PushBundle(b, reg.Host, "bench/app", fmt.Sprintf("1.%d.0", i))
	}
	nsCount := (n + benchPerNamespace - 1) / benchPerNamespace
	testenv.Parallel(b, nsCount, 16, func(i int) error {
		ns := fmt.Sprintf("bench-%d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
		return c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: ns}})
	})
	testenv.Parallel(b, n, 16, func(i int) error {
		return c.Create(ctx, &werfv1.WerfBundle{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: fmt.Sprintf("bench-%d", i/benchPerNamespace)},
			Spec: werfv1.WerfBundleSpec{
				Registry: werfv1.RegistrySpec{URL: reg.Repository("bench/app"), Insecure: true},
				Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
			},
		})
	})

	start := time.Now()
	p := operatorproc.Start(b, bin, operatorproc.Options{
		Kubeconfig: kubeconfig,
		Args:       append([]string{"--webhook-cert-mirror=true", "--webhook-cert-dns-names=localhost"}, flags...),
	})
	jobs := func() float64 {
		v, _ := p.MetricSum(ctx, "slipway_werfbundle_jobs_created_total", map[string]string{"kind": "apply"})
		return v
	}
	var firstJob time.Time
	created := testenv.Until(ctx, b, "every first Job exists", func() bool {
		if !p.Running() {
			b.Fatalf("the operator exited: %v", p.Err())
		}
		got := jobs()
		if got > 0 && firstJob.IsZero() {
			firstJob = time.Now()
		}
		return got >= float64(n)
	})
	firstJobs := created.Sub(start)
	families, err := p.Metrics(ctx)
	if err != nil {
		b.Fatal(err)
	}
	mem, err := p.Memory()
	if err != nil {
		b.Fatal(err)
	}
	cpu, err := p.CPUTime()
	if err != nil {
		b.Fatal(err)
	}

	// What the metric counted is in the API server: one first Job per bundle.
	var list batchv1.JobList
	if err := c.List(ctx, &list, client.MatchingLabels{werfbundle.LabelManagedBy: werfbundle.ManagedByValue, werfbundle.LabelJobKind: string(werfbundle.KindApply)}); err != nil {
		b.Fatal(err)
	}
	bundles := map[string]bool{}
	for _, j := range list.Items {
		if ns := j.Labels[werfbundle.LabelBundleNamespace]; strings.HasPrefix(ns, "bench-") {
			bundles[ns+"/"+j.Labels[werfbundle.LabelBundleName]] = true
		}
	}
	if len(bundles) != n {
		b.Fatalf("%d bundles own a Job in the API server, want %d", len(bundles), n)
	}

	b.ReportMetric(firstJobs.Seconds(), "s-first-jobs")
	b.ReportMetric(firstJob.Sub(start).Seconds(), "s-to-one-job")
	b.ReportMetric(float64(n)/firstJobs.Seconds(), "jobs/s")
	b.ReportMetric(cpu.Seconds(), "s-cpu-operator")
	b.ReportMetric(float64(mem.RSS)/(1<<20), "MiB-rss")
	b.ReportMetric(float64(mem.Peak)/(1<<20), "MiB-rss-peak")
	b.ReportMetric(float64(mem.Anon)/(1<<20), "MiB-rss-anon")
	b.ReportMetric(float64(mem.File)/(1<<20), "MiB-rss-file")
	b.ReportMetric(operatorproc.Sum(families, "go_memstats_heap_inuse_bytes", nil)/(1<<20), "MiB-heap-inuse")
	b.ReportMetric(operatorproc.Sum(families, "go_memstats_sys_bytes", nil)/(1<<20), "MiB-go-sys")
	total := 0.0
	for _, m := range benchMethods {
		v := operatorproc.Sum(families, "rest_client_requests_total", map[string]string{"method": m})
		total += v
		b.ReportMetric(v/float64(n), m+"/bundle")
	}
	b.ReportMetric(total, "api-requests")
	if err := p.Stop(ctx); err != nil {
		b.Errorf("stopping the operator: %v", err)
	}
}
