package testenv

import (
	"context"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Sizes reads a comma-separated list of benchmark sizes from the environment variable name, or
// returns def when it is not set.
func Sizes(tb testing.TB, name string, def ...int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var sizes []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			tb.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// Parallel runs f(0..n-1) on workers goroutines and fails on the first error.
func Parallel(tb testing.TB, n, workers int, f func(int) error) {
	tb.Helper()
	var wg sync.WaitGroup
	var first atomic.Value
	var next atomic.Int64
	for range max(workers, 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		tb.Fatal(err)
	}
}

// Until polls cond every 200 ms and returns the time it first held; it fails when ctx ends.
func Until(ctx context.Context, tb testing.TB, what string, cond func() bool) time.Time {
	tb.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			tb.Fatalf("timed out waiting until %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return time.Now()
}

// HasLabels reports whether the series m carries every label pair of match.
func HasLabels(m *dto.Metric, match map[string]string) bool {
	labels := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// MetricSum adds up the counter or gauge family name in controller-runtime's registry, over the
// series whose labels include every pair of match.
func MetricSum(tb testing.TB, name string, match map[string]string) float64 {
	tb.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !HasLabels(m, match) {
				continue
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// RSSBytes is this process's resident set size.
func RSSBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// CPUTime is the user and system CPU time this process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WriteHeapProfile saves the live heap to path.
func WriteHeapProfile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatal(err)
	}
}
