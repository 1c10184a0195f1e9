//go:build e2e

package werfbundle_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// documentedMetrics are the metric names of the Metrics table of docs/werfbundle.md.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/werfbundle.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(slipway_werfbundle_[a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	if len(names) < 10 {
		t.Fatalf("found %d metrics in docs/werfbundle.md: the table changed shape", len(names))
	}
	return names
}

// amount sums a family: counter values and histogram sample counts; for gauges, the series of the
// bundle ns/name.
func amount(f *dto.MetricFamily, ns, name string) float64 {
	sum := 0.0
	for _, m := range f.GetMetric() {
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			sum += m.GetCounter().GetValue()
		case dto.MetricType_HISTOGRAM:
			sum += float64(m.GetHistogram().GetSampleCount())
		case dto.MetricType_GAUGE:
			if labelValue(m, "namespace") == ns && labelValue(m, "name") == name {
				sum++
			}
		}
	}
	return sum
}

// TestWerfBundle_EveryDocumentedMetricMoves: each metric of docs/werfbundle.md is exported and
// moves when what it counts happens (a deploy, a 304, a drift check and correction, a registry
// failure, a push notification), and every slipway_werfbundle_ metric exported is documented.
func TestWerfBundle_EveryDocumentedMetricMoves(t *testing.T) {
	documented := documentedMetrics(t)
	before := gather(t)
	reg := startRegistry(t, "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"), withDrift(1))
	d.r.DecoratePod = d.outcomes.decorate
	snapshots := []map[string]*dto.MetricFamily{}

	d.reconcile()
	waitSynced(d) // a changed poll, a new tag, an apply Job created and finished, the phase
	d.outcomes.checkExit.Store(2)
	d.clock.Step(2 * time.Minute)
	d.reconcile() // a 304, the drift check Job
	d.eventually("the drift check finishes", func() bool {
		for _, j := range d.jobs(d.b) {
			if !jobDone(&j) {
				return false
			}
		}
		return true
	})
	d.reconcile() // the drift found, its correction
	snapshots = append(snapshots, gather(t))
	proxy.Inject(registrytest.ServerError, 1)
	d.clock.Step(2 * time.Minute)
	d.reconcile() // a failed poll: the bundle backs off
	snapshots = append(snapshots, gather(t))

	d.start()
	hook := httptest.NewServer(receiver.New(receiver.Options{Secret: []byte("hook-secret"), Trigger: d.reconciler()}).Handler())
	t.Cleanup(hook.Close)
	d.eventually("a push notification triggers the bundle", func() bool {
		req, err := http.NewRequestWithContext(d.ctx, http.MethodPost, hook.URL+"/hook",
			bytes.NewBufferString(`{"repository": "`+proxy.Repository("demo/app")+`", "tag": "1.0.0"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer hook-secret")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted && strings.Contains(body.String(), `"triggered":1`)
	})
	snapshots = append(snapshots, gather(t))

	for _, name := range documented {
		b := before[name]
		moved := false
		for _, s := range snapshots {
			if f := s[name]; f != nil && amount(f, d.ns, d.b.Name) > amount(b, d.ns, d.b.Name) {
				moved = true
			}
		}
		if !moved {
			t.Errorf("%s (docs/werfbundle.md) did not move", name)
		}
	}
	for name := range snapshots[len(snapshots)-1] {
		if strings.HasPrefix(name, "slipway_werfbundle_") && !contains(documented, name) {
			t.Errorf("%s is exported but not in docs/werfbundle.md", name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
