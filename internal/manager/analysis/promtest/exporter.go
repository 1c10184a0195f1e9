package promtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Exporter serves g's metrics at /metrics on a loopback port until the test's end; the returned
// Target carries labels (Prometheus attaches them to every series it scrapes from it).
func Exporter(tb testing.TB, g prometheus.Gatherer, labels map[string]string) Target {
	tb.Helper()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return Target{Addr: srv.Listener.Addr().String(), Labels: labels}
}

// Controller is a real controller-runtime controller (no API server: its requests come from
// Reconcile) whose reconciles succeed or fail as asked, so controller-runtime's own metrics
// (controller_runtime_reconcile_total{controller,result}, …) count them. Its Target exposes the
// series of this controller only, as the operator's metrics endpoint would.
type Controller struct {
	Name   string
	Target Target

	queue   chan reconcile.Request
	failing sync.Map // request name → struct{}: reconciles that fail
	done    sync.WaitGroup
	seq     atomic.Int64
}

// NewController starts the controller named name (unique in the test binary: controller-runtime's
// registry is global) and its exporter, both stopped at the test's end.
func NewController(tb testing.TB, name string, labels map[string]string) *Controller {
	tb.Helper()
	c := &Controller{Name: name, queue: make(chan reconcile.Request, 1024)}
	ctrl, err := controller.NewTypedUnmanaged(name, controller.TypedOptions[reconcile.Request]{
		Reconciler:         reconcile.Func(c.reconcile),
		SkipNameValidation: ptr.To(true),
		// Several at once, so a burst of requests is reconciled in well under a scrape interval.
		MaxConcurrentReconciles: 4,
	})
	if err != nil {
		tb.Fatalf("promtest: controller %s: %v", name, err)
	}
	err = ctrl.Watch(source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case r := <-c.queue:
					q.Add(r)
				}
			}
		}()
		return nil
	}))
	if err != nil {
		tb.Fatalf("promtest: controller %s: watch: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = ctrl.Start(ctx)
	}()
	tb.Cleanup(func() { cancel(); <-stopped })
	c.Target = Exporter(tb, onlyController(name), labels)
	return c
}

// reconcile fails the requests marked failing with a terminal error (counted as result="error"
// and not retried, so one request is one reconcile).
func (c *Controller) reconcile(_ context.Context, r reconcile.Request) (reconcile.Result, error) {
	defer c.done.Done()
	if _, bad := c.failing.LoadAndDelete(r.Name); bad {
		return reconcile.Result{}, reconcile.TerminalError(errors.New("reconcile failed"))
	}
	return reconcile.Result{}, nil
}

// Reconcile has the controller reconcile ok + failed requests (failed of them fail) and waits
// until all are done.
func (c *Controller) Reconcile(ok, failed int) {
	c.done.Add(ok + failed)
	for i := 0; i < ok+failed; i++ {
		name := "r" + strconv.FormatInt(c.seq.Add(1), 10)
		if i < failed {
			c.failing.Store(name, struct{}{})
		}
		c.queue <- reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
	}
	c.done.Wait()
}

// Drive reconciles perSecond requests a second, errorRatio of them failing, for d.
func (c *Controller) Drive(d time.Duration, perSecond int, errorRatio float64) {
	tick := 100 * time.Millisecond
	per := perSecond / 10
	bad := int(float64(per)*errorRatio + 0.5)
	end := time.Now().Add(d)
	t := time.NewTicker(tick)
	defer t.Stop()
	for ; time.Now().Before(end); <-t.C {
		c.Reconcile(per-bad, bad)
	}
}

// onlyController gathers controller-runtime's registry, keeping the series of controller name.
func onlyController(name string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := crmetrics.Registry.Gather()
		if err != nil {
			return nil, err
		}
		var out []*dto.MetricFamily
		for _, mf := range mfs {
			var keep []*dto.Metric
			for _, m := range mf.Metric {
				for _, l := range m.Label {
					if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == name {
						keep = append(keep, m)
						break
					}
				}
			}
			if len(keep) > 0 {
				mf.Metric = keep
				out = append(out, mf)
			}
		}
		return out, nil
	})
}

func tlsTrusting(caPEM []byte) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func certPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func decodeJSON(resp *http.Response, v any) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
