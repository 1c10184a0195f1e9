//go:build e2e

package werfbundle_test

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

func withPollInterval(d time.Duration) bundleOption {
	return func(b *werfv1.WerfBundle) { b.Spec.Registry.PollInterval = &metav1.Duration{Duration: d} }
}

// update changes the bundle's spec as a user would.
func (d *direct) update(change func(*werfv1.WerfBundle)) {
	d.t.Helper()
	got := d.get(d.b)
	change(got)
	if err := d.c.Update(d.ctx, got); err != nil {
		d.t.Fatal(err)
	}
}

// TestWerfBundle_PollScheduleChangeReschedulesAtOnce: a change of pollInterval (15m to 10s) or of
// the registry credentials polls at once and schedules by the new interval, instead of waiting
// for the poll scheduled under the old settings.
func TestWerfBundle_PollScheduleChangeReschedulesAtOnce(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"), withPollInterval(15*time.Minute))
	d.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: d.ns},
		StringData: map[string]string{"username": "bot", "password": "secret"}})
	d.reconcile()
	waitSynced(d)
	for _, tc := range []struct {
		name     string
		change   func(*werfv1.WerfBundle)
		maxAfter time.Duration
	}{
		{"pollInterval 15m -> 10s", func(b *werfv1.WerfBundle) { b.Spec.Registry.PollInterval.Duration = 10 * time.Second }, 11 * time.Second},
		{"secretRef set", func(b *werfv1.WerfBundle) { b.Spec.Registry.SecretRef = &corev1.LocalObjectReference{Name: "creds"} }, 11 * time.Second},
		{"pollInterval 10s -> 15m", func(b *werfv1.WerfBundle) { b.Spec.Registry.PollInterval.Duration = 15 * time.Minute }, 17 * time.Minute},
	} {
		proxy.ResetStats()
		d.update(tc.change)
		wait := d.reconcile()
		if n := proxy.Requests("/v2/demo/app/tags/list"); n != 1 {
			t.Errorf("%s: %d tag-list requests right after the change, want 1", tc.name, n)
		}
		if wait <= 0 || wait > tc.maxAfter {
			t.Errorf("%s: next poll in %s, want at most %s", tc.name, wait, tc.maxAfter)
		}
	}
}

// TestWerfBundle_SuspendStopsEverythingAndResumePollsAtOnce: a suspended bundle is Ready with
// reason Suspended, asks the registry nothing and deploys nothing; on resume it polls at once,
// not when the schedule from before the suspension says, and deploys the tag pushed meanwhile.
func TestWerfBundle_SuspendStopsEverythingAndResumePollsAtOnce(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"), withPollInterval(15*time.Minute))
	d.reconcile()
	waitSynced(d)

	d.update(func(b *werfv1.WerfBundle) { b.Spec.Suspend = true })
	d.reconcile()
	got := d.get(d.b)
	r := conditions.Get(got.Status.Conditions, conditions.Ready)
	if r == nil || r.Reason != werfbundle.ReasonSuspended || r.ObservedGeneration != got.Generation {
		t.Errorf("Ready while suspended = %+v", r)
	}
	if conditions.Get(got.Status.Conditions, conditions.Reconciling) != nil {
		t.Error("a suspended bundle is Reconciling")
	}

	registrytest.PushBundle(t, reg.Host, "demo/app", "1.1.0")
	proxy.ResetStats()
	d.clock.Step(time.Minute)
	d.reconcile()
	if n := proxy.Stats().Total; n != 0 {
		t.Errorf("a suspended bundle made %d registry requests", n)
	}
	if n := len(d.jobs(d.b)); n != 1 {
		t.Errorf("%d Jobs while suspended, want the first one only", n)
	}

	d.update(func(b *werfv1.WerfBundle) { b.Spec.Suspend = false })
	d.reconcile()
	if n := proxy.Requests("/v2/demo/app/tags/list"); n != 1 {
		t.Errorf("%d tag-list requests on resume, want 1 at once", n)
	}
	got = d.get(d.b)
	if got.Status.Registry == nil || got.Status.Registry.LatestTag != "1.1.0" || got.Status.ActiveJob == "" {
		t.Errorf("after resume: registry %+v, active Job %q; want 1.1.0 being deployed", got.Status.Registry, got.Status.ActiveJob)
	}
}

// TestWerfBundle_ReconcilingOnlyWhileWorking: Reconciling is True with reason Progressing while a
// deploy Job runs (kstatus InProgress), absent once Synced (Current), and True with reason
// RegistryRetrying while a Synced bundle's registry fails under the failure threshold.
func TestWerfBundle_ReconcilingOnlyWhileWorking(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	d := newDirect(t, proxy.Repository("demo/app"))
	d.reconcile()
	got := d.get(d.b)
	rc := conditions.Get(got.Status.Conditions, conditions.Reconciling)
	if rc == nil || rc.Status != metav1.ConditionTrue || rc.Reason != werfbundle.ReasonProgressing {
		t.Errorf("Reconciling while the Job runs = %+v", rc)
	}
	if s := kstatus(t, got); s != status.InProgressStatus {
		t.Errorf("kstatus while the Job runs = %s, want InProgress", s)
	}

	waitSynced(d)
	got = d.get(d.b)
	if rc := conditions.Get(got.Status.Conditions, conditions.Reconciling); rc != nil {
		t.Errorf("Reconciling once Synced = %+v, want absent", rc)
	}
	if s := kstatus(t, got); s != status.CurrentStatus {
		t.Errorf("kstatus once Synced = %s, want Current", s)
	}

	proxy.Inject(registrytest.ServerError, 1)
	d.clock.Step(2 * time.Minute)
	d.reconcile()
	got = d.get(d.b)
	rc = conditions.Get(got.Status.Conditions, conditions.Reconciling)
	if rc == nil || rc.Status != metav1.ConditionTrue || rc.Reason != werfbundle.ReasonRegistryRetrying {
		t.Errorf("Reconciling while the registry fails = %+v", rc)
	}
	if !conditions.IsTrue(got.Status.Conditions, conditions.Ready) {
		t.Error("a deployed bundle is not Ready while the registry retries")
	}
	d.clock.Step(2 * time.Minute)
	d.reconcile()
	if rc := conditions.Get(d.get(d.b).Status.Conditions, conditions.Reconciling); rc != nil {
		t.Errorf("Reconciling after the registry recovered = %+v, want absent", rc)
	}
}

// pollResults reads slipway_werfbundle_registry_polls_total by result from the metrics registry.
func pollResults(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range gather(t)["slipway_werfbundle_registry_polls_total"].GetMetric() {
		out[labelValue(m, "result")] = m.GetCounter().GetValue()
	}
	return out
}

func gather(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestWerfBundle_PollsCountedChangedUnchangedFailed: a poll is counted changed when the tag list
// differs from the last one, unchanged when the registry answers 304 or the same tags (a registry
// without ETag answers 200 every time), failed when it fails.
func TestWerfBundle_PollsCountedChangedUnchangedFailed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []registrytest.ProxyOption
		reply int // the answer to an unchanged poll
	}{
		{"with ETag", nil, 304},
		{"without ETag", []registrytest.ProxyOption{registrytest.WithoutETag()}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := startRegistry(t, "1.0.0")
			proxy := registrytest.NewFaultProxy(t, reg.URL, tc.opts...)
			d := newDirect(t, proxy.Repository("demo/app"))
			step := func(what string, want map[string]float64) {
				t.Helper()
				before := pollResults(t)
				d.reconcile()
				after := pollResults(t)
				for _, r := range []string{"changed", "unchanged", "failed"} {
					if got := after[r] - before[r]; got != want[r] {
						t.Errorf("%s: %s polls +%v, want +%v", what, r, got, want[r])
					}
				}
				d.clock.Step(2 * time.Minute)
			}
			step("first poll", map[string]float64{"changed": 1})
			proxy.ResetStats()
			step("same tags", map[string]float64{"unchanged": 1})
			if n := proxy.Responses(tc.reply); n != 1 {
				t.Errorf("the unchanged poll was answered %v, want one %d", proxy.Stats().ByStatus, tc.reply)
			}
			step("same tags again", map[string]float64{"unchanged": 1})
			registrytest.PushBundle(t, reg.Host, "demo/app", "1.1.0")
			step("a tag pushed", map[string]float64{"changed": 1})
			proxy.Inject(registrytest.ServerError, 1)
			step("registry fails", map[string]float64{"failed": 1})
		})
	}
}
