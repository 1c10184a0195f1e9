//go:build e2e

package werfbundle_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/registry"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// direct drives Reconcile by hand with a fake clock, so backoff and polling are checked exactly.
type direct struct {
	*fixture
	r     *werfbundle.Reconciler
	clock *clocktesting.FakeClock
	b     *werfv1.WerfBundle
}

func newDirect(t *testing.T, repo string, opts ...bundleOption) *direct {
	f := newFixture(t)
	d := &direct{fixture: f, clock: clocktesting.NewFakeClock(time.Now())}
	d.r = &werfbundle.Reconciler{
		Client: operatorClient(t), APIReader: operatorClient(t), Clock: d.clock, Logs: f.logs, OperatorNamespace: f.opNS,
		Registry: func(o registry.Options, l *registry.Limiter) (werfbundle.TagLister, error) {
			o.Timeout = 2 * time.Second // the Hang fault must not hold the test for long
			return registry.NewClient(o, l)
		},
	}
	d.b = f.bundle("app", repo, opts...)
	f.create(d.b)
	return d
}

// reconcile runs one reconcile and returns the requeue delay.
func (d *direct) reconcile() time.Duration {
	d.t.Helper()
	res, err := d.r.Reconcile(d.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(d.b)})
	if err != nil {
		d.t.Fatalf("reconcile: %v", err)
	}
	return res.RequeueAfter
}

func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	lo, hi := time.Duration(float64(want)*0.9), time.Duration(float64(want)*1.1)
	if got < lo || got > hi {
		t.Errorf("%s: requeue after %s, want %s ±10%%", what, got, want)
	}
}

// TestWerfBundle_RegistryFailuresBackOffThenFail: 500s back off 30s, 1m, 2m, 4m, 8m (±10 %),
// consecutiveFailures counts them, the fifth makes the bundle Failed, and a success resets it.
func TestWerfBundle_RegistryFailuresBackOffThenFail(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"))
	proxy.Inject(registrytest.ServerError, 0)

	for i, want := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute} {
		within(t, "failure "+string(rune('1'+i)), d.reconcile(), want)
		got := d.get(d.b)
		if got.Status.ConsecutiveFailures != int32(i+1) {
			t.Fatalf("after failure %d: consecutiveFailures = %d", i+1, got.Status.ConsecutiveFailures)
		}
		wantPhase := werfv1.PhaseSyncing
		if i == 4 {
			wantPhase = werfv1.PhaseFailed
		}
		if got.Status.Phase != wantPhase {
			t.Errorf("after failure %d: phase %s, want %s", i+1, got.Status.Phase, wantPhase)
		}
		d.clock.Step(want + want/10)
	}
	got := d.get(d.b)
	r := conditions.Get(got.Status.Conditions, conditions.Ready)
	if r == nil || r.Reason != werfbundle.ReasonRegistryUnavailable || !strings.Contains(r.Message, "failure 5 in a row") {
		t.Errorf("Ready after 5 failures = %+v", r)
	}
	// A sixth stays at the 8m cap.
	within(t, "failure 6", d.reconcile(), 8*time.Minute)
	d.clock.Step(9 * time.Minute)

	proxy.Clear()
	d.reconcile()
	got = d.get(d.b)
	if got.Status.ConsecutiveFailures != 0 || got.Status.Registry == nil || got.Status.Registry.LatestTag != "1.0.0" {
		t.Errorf("after recovery: %+v", got.Status)
	}
}

// TestWerfBundle_TooManyRequestsHonoursRetryAfter: a 429 waits what Retry-After says, plus up to
// 10 %: never less.
func TestWerfBundle_TooManyRequestsHonoursRetryAfter(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"))
	for i := range 5 {
		proxy.Add(registrytest.Rule{Fault: registrytest.TooManyRequests, RetryAfter: "120", Times: 1})
		if got := d.reconcile(); got < 2*time.Minute || got > 2*time.Minute+12*time.Second {
			t.Errorf("429 number %d: requeue after %s, want 2m to 2m12s", i+1, got)
		}
		d.clock.Step(3 * time.Minute)
	}
}

// TestWerfBundle_FaultsNeverCrashAndStayBounded: hangs, resets, malformed JSON and a 64 MiB body
// are each one counted failure; the operator's heap does not grow with the body.
func TestWerfBundle_FaultsNeverCrashAndStayBounded(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"))
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	faults := []registrytest.Fault{registrytest.Hang, registrytest.ConnectionReset, registrytest.MalformedJSON, registrytest.HugeBody}
	for i, fault := range faults {
		proxy.Clear()
		proxy.Inject(fault, 1)
		d.reconcile()
		got := d.get(d.b)
		if got.Status.ConsecutiveFailures != int32(i+1) {
			t.Errorf("%s: consecutiveFailures = %d, want %d (%s)", fault, got.Status.ConsecutiveFailures, i+1, got.Status.LastErrorMessage)
		}
		if got.Status.LastErrorMessage == "" {
			t.Errorf("%s: no error message", fault)
		}
		d.clock.Step(10 * time.Minute)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 16<<20 {
		t.Errorf("heap grew by %d MiB through the faults", grown>>20)
	}
	proxy.Clear()
	d.reconcile()
	if got := d.get(d.b); got.Status.ConsecutiveFailures != 0 {
		t.Errorf("not recovered: %s", got.Status.LastErrorMessage)
	}
}

// TestWerfBundle_NoOpPollIsOneConditionalRequestAndNoWrite: between polls a reconcile asks nothing;
// at the interval one request with If-None-Match gets a 304 and nothing is written.
func TestWerfBundle_NoOpPollIsOneConditionalRequestAndNoWrite(t *testing.T) {
	reg := startRegistry(t, "1.0.0", "1.1.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"))
	d.b.Spec.Registry.PollInterval = &metav1.Duration{Duration: time.Minute}
	d.reconcile() // polls, creates the Job
	st := d.get(d.b).Status
	if st.Registry == nil || st.Registry.ETag == "" || st.Registry.LatestTag != "1.1.0" {
		t.Fatalf("registry status after the first poll: %+v", st.Registry)
	}

	// Make the bundle Synced by hand: this test is about polling, the Job flow is tested elsewhere.
	waitSynced(d)

	rv := d.get(d.b).ResourceVersion
	proxy.ResetStats()
	wait := d.reconcile()
	if proxy.Stats().Total != 0 {
		t.Errorf("a reconcile before the interval asked the registry %d times", proxy.Stats().Total)
	}
	if wait <= 0 || wait > time.Minute+6*time.Second {
		t.Errorf("requeue after %s, want the rest of the 1m interval", wait)
	}
	d.clock.Step(2 * time.Minute)
	d.reconcile()
	stats := proxy.Stats()
	if stats.ByStatus[304] != 1 || stats.Total != 1 {
		t.Errorf("the poll at the interval made %d requests (%v), want one 304", stats.Total, stats.ByStatus)
	}
	if got := d.get(d.b).ResourceVersion; got != rv {
		t.Errorf("a no-op poll wrote the bundle (resourceVersion %s -> %s)", rv, got)
	}
}

// waitSynced lets kwok finish the Job and reconciles until the bundle is Synced.
func waitSynced(d *direct) {
	d.t.Helper()
	d.eventually("the bundle is Synced", func() bool {
		d.reconcile()
		return d.get(d.b).Status.Phase == werfv1.PhaseSynced
	})
}
