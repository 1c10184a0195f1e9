package operators

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

const chartName = "widget-operator"

// allVersions are the fixture charts of every version, with a template CRD and a webhook.
func allVersions() []charttest.ChartFiles {
	var out []charttest.ChartFiles
	for _, v := range charttest.Versions {
		out = append(out, charttest.OperatorChart(chartName, v.Version, v.Level, charttest.WithTemplateCRD(), charttest.WithWebhook()))
	}
	return out
}

func newCharts(t *testing.T, opts Options) *Charts {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantInvalid fails unless err is *invalid.Error for field with reason.
func wantInvalid(t *testing.T, err error, field, reason string) {
	t.Helper()
	e, ok := invalid.As(err)
	if !ok {
		t.Fatalf("error %v (%T), want *invalid.Error %s/%s", err, err, field, reason)
	}
	if e.Field != field || e.Reason != reason {
		t.Fatalf("error %s/%s %q, want %s/%s", e.Field, e.Reason, e.Message, field, reason)
	}
	if e.Message == "" {
		t.Fatalf("error %s/%s has no message", field, reason)
	}
}

func versionNames(vs []Version) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out
}
