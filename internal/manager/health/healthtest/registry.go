package healthtest

import (
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ownMetrics serves, of controller-runtime's registry (one per process), the series of the
// controller named name (label controller, or the workqueue's name) and those of no controller
// (process_*, go_*): what a process that runs only this controller serves. Several Operators in
// one test process would otherwise serve each other's reconcile counters, and one test's failing
// reconciles would show in another's error rate.
func ownMetrics(name string) http.Handler {
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		families, err := metrics.Registry.Gather()
		if err != nil {
			return nil, err
		}
		out := families[:0]
		for _, f := range families {
			kept := f.Metric[:0]
			for _, m := range f.Metric {
				if own(m, name) {
					kept = append(kept, m)
				}
			}
			if len(kept) > 0 {
				f.Metric = kept
				out = append(out, f)
			}
		}
		return out, nil
	})
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

func own(m *dto.Metric, name string) bool {
	for _, l := range m.GetLabel() {
		if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() != name {
			return false
		}
	}
	return true
}

// filterProvider makes controller-runtime's metrics server serve ownMetrics(name), behind its
// authentication and authorization filter when secure.
func filterProvider(name string, secure bool) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
		auth := metricsserver.Filter(func(_ logr.Logger, h http.Handler) (http.Handler, error) { return h, nil })
		if secure {
			var err error
			if auth, err = filters.WithAuthenticationAndAuthorization(cfg, hc); err != nil {
				return nil, err
			}
		}
		return func(log logr.Logger, _ http.Handler) (http.Handler, error) {
			return auth(log, ownMetrics(name))
		}, nil
	}
}
