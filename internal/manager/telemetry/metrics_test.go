package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value reads a counter's or gauge's current value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

type counter struct {
	n   int
	err error
}

func (c counter) OperatorCount(context.Context) (int, error) { return c.n, c.err }

func TestMetricsRegisteredAndGathered(t *testing.T) {
	ObserveHTTPRequest("GET /api/v1/clusters", "GET", 200, 12*time.Millisecond)
	ObserveHTTPRequest("GET /api/v1/clusters", "GET", 0, 3*time.Millisecond)
	ObserveHTTPRequest("POST /api/v1/clusters", "POST", 429, time.Millisecond)
	before := value(t, ClustersRegisteredTotal)
	ClusterRegistered()
	if got := value(t, ClustersRegisteredTotal) - before; got != 1 {
		t.Fatalf("clusters registered grew by %v", got)
	}
	CRDValidated("breaking")
	CRDValidated("compatible")
	CRDValidated("compatible")
	RateLimited("POST /api/v1/clusters")
	ObserveClusterHealthCheck(40 * time.Millisecond)
	SetClusterHealth(map[string]int{"Healthy": 3, "Unhealthy": 1})
	SetOperatorCount(context.Background(), counter{n: 7})
	SetOperatorCount(context.Background(), counter{n: 99, err: errors.New("db down")})

	if got := value(t, Operators); got != 7 {
		t.Errorf("operators = %v, want 7 (a store error keeps the last value)", got)
	}
	for h, want := range map[string]float64{"Healthy": 3, "Unhealthy": 1, "Unknown": 0} {
		if got := value(t, Clusters.WithLabelValues(h)); got != want {
			t.Errorf("clusters{health=%q} = %v, want %v", h, got, want)
		}
	}
	if got := value(t, CRDsValidatedTotal.WithLabelValues("compatible")); got < 2 {
		t.Errorf("crds validated compatible = %v", got)
	}

	families, err := Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	for _, name := range []string{
		"slipway_manager_http_request_duration_seconds", "slipway_manager_clusters_registered_total",
		"slipway_manager_crds_validated_total", "slipway_manager_operators", "slipway_manager_clusters",
		"slipway_manager_cluster_health_check_duration_seconds", "slipway_manager_rate_limited_total",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if byName[name] == nil {
			t.Errorf("%s not gathered", name)
		}
	}
	var sawImplicit200 bool
	for _, m := range byName["slipway_manager_http_request_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["route"] == "GET /api/v1/clusters" && labels["code"] == "200" {
			sawImplicit200 = m.GetHistogram().GetSampleCount() >= 2
		}
	}
	if !sawImplicit200 {
		t.Error("status 0 was not counted as 200")
	}
}

func TestMetricsHandler(t *testing.T) {
	RateLimited("GET /api/v1/operators")
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
	for _, want := range []string{
		`slipway_manager_rate_limited_total{route="GET /api/v1/operators"}`,
		`slipway_manager_clusters{health="Unknown"}`,
		"# TYPE slipway_manager_http_request_duration_seconds histogram",
		"go_goroutines",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
