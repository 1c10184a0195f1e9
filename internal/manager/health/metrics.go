package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The metrics the metrics part reads (controller-runtime's and client-go's workqueue's).
const (
	metricReconcileTotal  = "controller_runtime_reconcile_total"
	metricReconcileErrors = "controller_runtime_reconcile_errors_total"
	metricReconcilePanics = "controller_runtime_reconcile_panics_total"
	metricQueueDepth      = "workqueue_depth"
	metricQueueLongest    = "workqueue_longest_running_processor_seconds"
	metricStartTime       = "process_start_time_seconds"
)

// Prometheus' scrape annotations on a Service, which name its metrics port when no port is named
// like one.
const (
	scrapeAnnotation = "prometheus.io/scrape"
	portAnnotation   = "prometheus.io/port"
	pathAnnotation   = "prometheus.io/path"
	schemeAnnotation = "prometheus.io/scheme"
)

// MetricsSnapshot is the operator's reconcile counters and workqueue gauges at one moment, summed
// over its controllers (one process: the one the Service proxy reached).
type MetricsSnapshot struct {
	At       time.Time `json:"at"`
	Endpoint string    `json:"endpoint"`
	// StartTime is process_start_time_seconds: another value means another process, whose
	// counters started from zero.
	StartTime float64 `json:"startTime,omitempty"`
	Total     float64 `json:"total"`
	Errors    float64 `json:"errors"`
	Panics    float64 `json:"panics"`
	// Depth is the workqueues' summed depth, Longest the longest running processor in seconds.
	Depth   float64 `json:"depth"`
	Longest float64 `json:"longest"`
}

// metricsEndpoint is where the operator serves its metrics, reached through the API server's
// Service proxy.
type metricsEndpoint struct {
	namespace, service, port, scheme, path string
}

func (e metricsEndpoint) String() string {
	return fmt.Sprintf("%s://%s/%s:%s%s", e.scheme, e.namespace, e.service, e.port, e.path)
}

// errNoEndpoint: the release has no Service that serves metrics.
var errNoEndpoint = errors.New("the release has no metrics Service (a Service labelled " + InstanceLabel +
	"=<release> with a port named like metrics, or annotated " + scrapeAnnotation + ")")

// findMetricsEndpoint looks for the release's metrics Service: labelled with the release (or
// carrying Helm's release annotations), with a port whose name contains "metrics" or annotated
// prometheus.io/scrape. The scheme is https when the port's name contains https, its
// appProtocol is https or the Service is annotated prometheus.io/scheme: https.
func findMetricsEndpoint(ctx context.Context, kube kubernetes.Interface, t Target) (metricsEndpoint, error) {
	list, err := kube.CoreV1().Services(t.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return metricsEndpoint{}, fmt.Errorf("listing the Services of %s: %w", t.Namespace, err)
	}
	for _, svc := range list.Items {
		if svc.Labels[InstanceLabel] != t.Release && svc.Annotations[ReleaseNameAnnotation] != t.Release {
			continue
		}
		if ep, ok := serviceEndpoint(&svc); ok {
			return ep, nil
		}
	}
	return metricsEndpoint{}, errNoEndpoint
}

func serviceEndpoint(svc *corev1.Service) (metricsEndpoint, bool) {
	ep := metricsEndpoint{namespace: svc.Namespace, service: svc.Name, path: "/metrics", scheme: "http"}
	if p := svc.Annotations[pathAnnotation]; p != "" {
		ep.path = p
	}
	scrape, _ := strconv.ParseBool(svc.Annotations[scrapeAnnotation])
	for _, p := range svc.Spec.Ports {
		named := strings.Contains(p.Name, "metrics")
		annotated := scrape && svc.Annotations[portAnnotation] == strconv.Itoa(int(p.Port))
		if !named && !annotated {
			continue
		}
		ep.port = p.Name
		if ep.port == "" {
			ep.port = strconv.Itoa(int(p.Port))
		}
		if strings.Contains(p.Name, "https") || (p.AppProtocol != nil && *p.AppProtocol == "https") || svc.Annotations[schemeAnnotation] == "https" {
			ep.scheme = "https"
		}
		return ep, true
	}
	return metricsEndpoint{}, false
}

// readMetrics reads the endpoint through the API server's Service proxy, with the manager's
// identity for the cluster (the proxy does not pass it on to the endpoint).
func readMetrics(ctx context.Context, kube kubernetes.Interface, ep metricsEndpoint, now time.Time) (*MetricsSnapshot, error) {
	raw, err := kube.CoreV1().Services(ep.namespace).ProxyGet(ep.scheme, ep.service, ep.port, ep.path, nil).DoRaw(ctx)
	if err != nil {
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			switch code := st.Status().Code; code {
			case 401, 403:
				return nil, fmt.Errorf("%s answered %d through the API server's proxy: it requires authentication, which the proxy does not pass on", ep, code)
			}
		}
		return nil, fmt.Errorf("reading %s: %w", ep, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("reading %s: not the Prometheus text format: %w", ep, err)
	}
	if families[metricReconcileTotal] == nil {
		return nil, fmt.Errorf("%s serves no %s: not a controller-runtime controller's metrics", ep, metricReconcileTotal)
	}
	s := &MetricsSnapshot{At: now.UTC(), Endpoint: ep.String()}
	s.Total = sum(families[metricReconcileTotal], nil)
	s.Errors = sum(families[metricReconcileTotal], map[string]string{"result": "error"})
	if s.Errors == 0 {
		s.Errors = sum(families[metricReconcileErrors], nil)
	}
	s.Panics = sum(families[metricReconcilePanics], nil)
	s.Depth = sum(families[metricQueueDepth], nil)
	s.Longest = maxOf(families[metricQueueLongest])
	s.StartTime = maxOf(families[metricStartTime])
	return s, nil
}

// sum adds the counter or gauge values of the family's series with the labels of match.
func sum(f *dto.MetricFamily, match map[string]string) float64 {
	if f == nil {
		return 0
	}
	var total float64
	for _, m := range f.GetMetric() {
		if hasLabels(m, match) {
			total += value(m)
		}
	}
	return total
}

func maxOf(f *dto.MetricFamily) float64 {
	var out float64
	for _, m := range f.GetMetric() {
		out = math.Max(out, value(m))
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

func hasLabels(m *dto.Metric, match map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := match[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(match)
}
