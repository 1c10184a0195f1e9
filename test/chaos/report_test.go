//go:build e2e

package chaos

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// figures is what one suite reports.
type figures struct {
	suite   string
	scale   string
	objects int
	kills   int
	// apiserverDown is how long the API was unavailable during its restart.
	apiserverDown time.Duration
	duplicates    int
	lost          int
	// converged is the time from the last fault (the last kill, the API server back after its
	// restart, the end of the registry faults) until every object converged.
	converged time.Duration
	peakRSS   int64
	// extra are suite-specific figures, printed after the common ones.
	extra []extraFigure
}

type extraFigure struct {
	name  string
	value float64
	unit  string
}

func (f *figures) add(name string, value float64, unit string) {
	f.extra = append(f.extra, extraFigure{name, value, unit})
}

var (
	reportMu sync.Mutex
	reported []figures
)

// report prints the suite's figures as a table and as one line in the benchmark format (so
// benchstat reads them), and keeps them for the summary printed by TestMain.
func report(t *testing.T, f figures) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\nchaos %s (%s scale)\n", f.suite, f.scale)
	row := func(k, v string) { fmt.Fprintf(&b, "  %-34s %s\n", k, v) }
	row("objects", fmt.Sprint(f.objects))
	row("operator kills (SIGKILL)", fmt.Sprint(f.kills))
	row("API server restarts", fmt.Sprintf("1 (API unavailable %s)", f.apiserverDown.Round(10*time.Millisecond)))
	row("duplicates", fmt.Sprint(f.duplicates))
	row("objects lost", fmt.Sprint(f.lost))
	row("last fault -> all converged", f.converged.Round(10*time.Millisecond).String())
	row("peak operator RSS", fmt.Sprintf("%.1f MiB", float64(f.peakRSS)/(1<<20)))
	for _, e := range f.extra {
		row(e.name, fmt.Sprintf("%g %s", e.value, e.unit))
	}
	fmt.Fprintf(&b, "BenchmarkChaos_%s/scale=%s 1 %d objects %d kills %d duplicates %d lost %.2f s-converged-after-last-fault %.1f MiB-peak-rss %.2f s-apiserver-down",
		f.suite, f.scale, f.objects, f.kills, f.duplicates, f.lost, f.converged.Seconds(), float64(f.peakRSS)/(1<<20), f.apiserverDown.Seconds())
	for _, e := range f.extra {
		fmt.Fprintf(&b, " %g %s", e.value, e.unit)
	}
	b.WriteString("\n")
	// Stdout, not t.Log: the figures show in make chaos (-v) once, unindented.
	fmt.Print(b.String())
	reportMu.Lock()
	reported = append(reported, f)
	reportMu.Unlock()
}

// TestMain runs the suites and prints every suite's figures once more at the end, together.
func TestMain(m *testing.M) {
	code := m.Run()
	reportMu.Lock()
	defer reportMu.Unlock()
	if len(reported) > 0 {
		fmt.Printf("\n%-12s %-6s %8s %6s %10s %6s %12s %10s\n", "suite", "scale", "objects", "kills", "duplicates", "lost", "converged", "peak RSS")
		for _, f := range reported {
			fmt.Printf("%-12s %-6s %8d %6d %10d %6d %11.1fs %7.1f MiB\n", f.suite, f.scale, f.objects, f.kills, f.duplicates, f.lost,
				f.converged.Seconds(), float64(f.peakRSS)/(1<<20))
		}
	}
	os.Exit(code)
}
