package operators

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
)

// TestInspectSpan checks that Inspect runs in one operator.validate span, marked failed when
// validation fails. It replaces the global tracer provider, so it does not run in parallel.
func TestInspectSpan(t *testing.T) {
	rec := spantest.Record(t)

	repo := charttest.ServeRepository(t, allVersions()...)
	c := newCharts(t, Options{})
	if _, err := c.Inspect(context.Background(), ChartRef{Repository: repo.URL, Name: chartName}, ""); err != nil {
		t.Fatal(err)
	}
	_, err := c.Inspect(context.Background(), ChartRef{Repository: repo.URL, Name: "nope"}, "")
	wantInvalid(t, err, "chart.name", "notFound")

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2", len(spans))
	}
	for i, wantStatus := range []codes.Code{codes.Unset, codes.Error} {
		s := spans[i]
		if s.Name() != "operator.validate" || s.Status().Code != wantStatus {
			t.Fatalf("span %d: %s with status %v, want operator.validate with %v", i, s.Name(), s.Status().Code, wantStatus)
		}
	}
	var versions int64
	for _, a := range spans[0].Attributes() {
		if a.Key == "chart.versions" {
			versions = a.Value.AsInt64()
		}
	}
	if versions != 3 {
		t.Fatalf("span attribute chart.versions = %d, want 3", versions)
	}
}
