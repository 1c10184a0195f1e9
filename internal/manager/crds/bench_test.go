package crds

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// chartCRDs extracts the CRDs of a ManyCRDs chart the way registration does.
func chartCRDs(tb testing.TB, n int, level charttest.Level) []*apiextensionsv1.CustomResourceDefinition {
	tb.Helper()
	archive, err := charttest.Archive(charttest.ManyCRDs("many", "1.0.0", n, level))
	if err != nil {
		tb.Fatal(err)
	}
	ch, err := operators.LoadArchive(archive)
	if err != nil {
		tb.Fatal(err)
	}
	crds, err := operators.ExtractCRDs(ch)
	if err != nil {
		tb.Fatal(err)
	}
	if len(crds) != n {
		tb.Fatalf("extracted %d CRDs, want %d", len(crds), n)
	}
	return crds
}

// BenchmarkValidateOperator is one validate of a 50-CRD operator upgrade: Compare and
// ValidateExisting for every CRD, against a real API server holding 4 objects per CRD (one of
// which the new schema refuses). It reports p50 and p99 of a whole validate (target p99 < 5 s).
// BENCH_CRDS overrides the CRD count.
func BenchmarkValidateOperator(b *testing.B) {
	for _, n := range testenv.Sizes(b, "BENCH_CRDS", 50) {
		b.Run(fmt.Sprintf("crds=%d", n), func(b *testing.B) { benchValidate(b, n) })
	}
}

func benchValidate(b *testing.B, n int) {
	c := newCluster(b)
	oldCRDs := chartCRDs(b, n, charttest.Base)
	newCRDs := chartCRDs(b, n, charttest.Breaking)
	ns := "bench"
	c.namespace(b, ns)
	testenv.Parallel(b, n, 8, func(i int) error { return c.tryInstallCRD(b, oldCRDs[i]) })
	specs := []map[string]any{
		{"size": int64(1), "color": "red"},
		{"size": int64(2), "color": "green", "tls": map[string]any{"secretName": "s"}},
		{"size": int64(3), "name": "abc"},
		{"size": int64(4), "color": "blue"},
	}
	testenv.Parallel(b, n*len(specs), 8, func(i int) error {
		return c.tryCreate(oldCRDs[i/len(specs)], ns, fmt.Sprintf("obj-%d", i%len(specs)), specs[i%len(specs)])
	})
	ctx := context.Background()

	validate := func() int {
		invalidObjects := 0
		for i := range newCRDs {
			report, err := Compare(oldCRDs[i], newCRDs[i])
			if err != nil {
				b.Fatal(err)
			}
			if !report.Breaking() {
				b.Fatalf("%s: the breaking level is not breaking", newCRDs[i].Name)
			}
			res, err := ValidateExisting(ctx, env.Config, newCRDs[i])
			if err != nil {
				b.Fatal(err)
			}
			invalidObjects += len(res.Invalid)
		}
		return invalidObjects
	}
	if got := validate(); got != n {
		b.Fatalf("%d invalid objects, want one per CRD (%d)", got, n)
	}

	var durations []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		validate()
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(percentile(durations, 50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(durations, 99).Microseconds())/1000, "p99-ms")
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// BenchmarkCompare is Compare alone for every CRD of a 50-CRD operator upgrade.
func BenchmarkCompare(b *testing.B) {
	oldCRDs := chartCRDs(b, 50, charttest.Base)
	newCRDs := chartCRDs(b, 50, charttest.Breaking)
	for b.Loop() {
		for i := range newCRDs {
			if _, err := Compare(oldCRDs[i], newCRDs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
