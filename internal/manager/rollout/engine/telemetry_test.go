package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// TestSpansAndMetrics runs a Direct deployment with an in-memory span recorder: its steps are
// operator.deploy spans with the design's children (operator.validate, cluster.connect,
// helm.install → crd.apply and controller.deploy, operator.healthcheck → the three checks),
// and the deployment counters and histograms move. It replaces the global tracer provider, so
// it does not run in parallel.
func TestSpansAndMetrics(t *testing.T) {
	rec := spantest.Record(t)
	deployedBefore := metricValue(t, "slipway_manager_operators_deployed_total", map[string]string{"strategy": "Direct"})
	durationsBefore := metricValue(t, "slipway_manager_operator_deploy_duration_seconds", map[string]string{"strategy": "Direct", "status": "Completed"})

	h := newHarness(t, []target{{Name: "span-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) { c.HealthLoop = false })
	h.operator("spans", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "spans", "version": "1.0.0", "clusters": ["span-1"], "strategy": "Direct"}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	h.eng.Stop()

	spans := rec.Ended()
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
	}
	parentOf := func(s sdktrace.ReadOnlySpan) string {
		if p, ok := byID[s.Parent().SpanID().String()]; ok {
			return p.Name()
		}
		return ""
	}
	want := designTrace(t)
	// Registering the cluster has cluster.connect spans of its own (roots): each name needs one
	// span under the expected parent.
	seen := map[string]bool{}
	for _, s := range spans {
		if parent, ok := want[s.Name()]; ok && parentOf(s) == parent {
			seen[s.Name()] = true
		}
	}
	for name := range want {
		if !seen[name] {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name())
			}
			slices.Sort(names)
			t.Errorf("no %s span under %s; spans: %v", name, want[name], slices.Compact(names))
		}
	}
	if got := metricValue(t, "slipway_manager_operators_deployed_total", map[string]string{"strategy": "Direct"}); got != deployedBefore+1 {
		t.Errorf("operators deployed %v, want %v", got, deployedBefore+1)
	}
	if got := metricValue(t, "slipway_manager_operator_deploy_duration_seconds", map[string]string{"strategy": "Direct", "status": "Completed"}); got != durationsBefore+1 {
		t.Errorf("deploy durations observed %v, want %v", got, durationsBefore+1)
	}
}

// metricValue is a counter's value, a gauge's, or a histogram's sample count, summed over the
// series of name whose labels include match, from the manager's registry.
func metricValue(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	families, err := telemetry.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return operatorproc.Sum(byName, name, match)
}

// designTrace reads the design's example trace (testdata/design-trace.txt, copied from
// operator-manager-spec.md, Observability) into each child span's parent.
func designTrace(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "design-trace.txt"))
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	var stack []string // the span names of the current path, by depth
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if name, ok := strings.CutPrefix(line, "Root Span: "); ok {
			stack = []string{strings.Fields(name)[0]}
			continue
		}
		i := strings.Index(line, "Child: ")
		if i < 0 || len(stack) == 0 {
			t.Fatalf("design trace: unexpected line %q", line)
		}
		// "  ├─ Child: x" is depth 1; each level indents by four columns.
		depth := (len([]rune(line[:i]))-5)/4 + 1
		name := strings.Fields(line[i+len("Child: "):])[0]
		if depth > len(stack) {
			t.Fatalf("design trace: %q skips a level", line)
		}
		parents[name] = stack[depth-1]
		stack = append(stack[:depth], name)
	}
	if len(parents) != 9 {
		t.Fatalf("design trace: %d child spans, want the design's 9: %v", len(parents), parents)
	}
	return parents
}
