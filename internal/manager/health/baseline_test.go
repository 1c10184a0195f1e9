package health

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health/healthtest"
)

// TestCRDBaseline runs a real controller (healthtest) over 40 Gizmos and judges them against a
// baseline captured while 4 of them were failing for their tenants: more tenants' failures (new
// resources, resources their users changed) leave the operator Healthy; resources Ready in the
// baseline and failing now make it Unhealthy, with their reasons; a controller that stops writing
// status makes it Unhealthy past the grace period.
func TestCRDBaseline(t *testing.T) {
	installGizmoCRD(t)
	ns := namespace(t)
	const n = 40
	for i := range n {
		if err := env.Client.Create(context.Background(), gizmo(ns, fmt.Sprintf("g%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	op := healthtest.Start(t, env.Config, healthtest.Options{Namespace: ns, Release: "gizmo", GVK: gizmoGVK})
	op.SetFailing("g00", "g01", "g02", "g03")
	c := NewChecker(Config{})
	target := Target{OperatorName: "gizmo", Namespace: ns, Release: "gizmo", CRDs: []string{gizmoCRD}}
	checkUntil(t, c, target, "36 Ready, 4 failing", func(h Result) bool { return h.CRDs.Ready == 36 && h.CRDs.Failing == 4 })
	base, err := c.Capture(testCtx(t), "local", env.Config, target)
	if err != nil {
		t.Fatal(err)
	}
	base.Source = BaselineDeploymentStart
	// Stored and read back, as the engine passes it on.
	raw, err := EncodeBaseline(base)
	if err != nil {
		t.Fatal(err)
	}
	if target.Baseline, err = DecodeBaseline(raw); err != nil {
		t.Fatal(err)
	}
	if s := target.Baseline.Summary(); s.Resources != n || s.Failing != 4 || !s.Metrics {
		t.Fatalf("baseline summary %+v, want 40 resources, 4 failing, a metrics snapshot", s)
	}

	// Tenants: 4 new resources failing, 2 changed by their users into failing.
	for i := range 4 {
		if err := env.Client.Create(context.Background(), gizmo(ns, fmt.Sprintf("new%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	bumpSize(t, ns, "g04", "g05")
	op.SetFailing("g00", "g01", "g02", "g03", "g04", "g05", "new0", "new1", "new2", "new3")
	got := checkUntil(t, c, target, "10 failing", func(h Result) bool { return h.CRDs.Failing == 10 }).CRDs
	if got.Health != api.Healthy || got.State() != api.ReconciliationActive || got.ErrorRate != 0 ||
		got.TenantFailures != (api.TenantFailures{FailingBefore: 4, FailingReconciled: 6}) || got.OperatorFailures != (api.OperatorFailures{}) ||
		got.Baseline == nil || got.Baseline.Source != BaselineDeploymentStart || got.Baseline.Failing != 4 {
		t.Fatalf("tenants' failures (10 of 44, 23 %%): %+v, want Healthy, Active", got)
	}
	if e := exampleOf(got, "failingBefore"); e == nil || e.Reason != healthtest.FailReason || e.BaselineReason != healthtest.FailReason || e.Blame != BlameTenant {
		t.Fatalf("example of a resource failing before: %+v in %+v", e, got.Examples)
	}

	// The version fails 3 resources that were Ready, unchanged by their users: 3 of 44 ≥ 5 %.
	op.SetFailing("g00", "g01", "g02", "g03", "g04", "g05", "new0", "new1", "new2", "new3", "g10", "g11", "g12")
	got = checkUntil(t, c, target, "13 failing", func(h Result) bool { return h.CRDs.Failing == 13 }).CRDs
	if got.Health != api.Unhealthy || got.State() != api.ReconciliationFailing || got.OperatorFailures.NewlyFailing != 3 ||
		got.ErrorRate != 3.0/44 || !hasMessage(got.Messages, "3 Ready before, not Ready now") {
		t.Fatalf("3 resources newly failing: %+v, want Unhealthy, Failing", got)
	}
	if e := exampleOf(got, "newlyFailing"); e == nil || e.Blame != BlameOperator || e.Reason != healthtest.FailReason || e.BaselineReason != "Ready" ||
		!strings.HasPrefix(e.Name, ns+"/g1") {
		t.Fatalf("example of a newly failing resource: %+v in %+v", e, got.Examples)
	}
	// Against the health loop's last Healthy baseline (no version changed since it), the same three
	// turned Ready=False while their operator reconciles them: their tenants', the operator Healthy.
	steady := *target.Baseline
	steady.Source = BaselineLastHealthy
	live := target
	live.Baseline = &steady
	if got := checkOnce(t, c, live).CRDs; got.Health != api.Healthy || got.OperatorFailures != (api.OperatorFailures{}) ||
		got.TenantFailures != (api.TenantFailures{FailingBefore: 4, FailingReconciled: 9}) {
		t.Fatalf("13 failing against the last Healthy baseline: %+v, want Healthy, every failure the tenants'", got)
	}

	// The controller stops writing status; the users change every resource. Within the grace
	// period they are being reconciled; past it the operator is not reconciling them.
	op.SetFailing("g00", "g01", "g02", "g03", "g04", "g05", "new0", "new1", "new2", "new3")
	checkUntil(t, c, target, "10 failing again", func(h Result) bool { return h.CRDs.Failing == 10 })
	op.SetMode(healthtest.StopStatus)
	time.Sleep(time.Second) // reconciles under way when the mode changed finish first
	bumpSize(t, ns)
	if got = checkOnce(t, c, target).CRDs; got.Health != api.Healthy || got.Pending != 44 {
		t.Fatalf("just changed: %+v, want Healthy, 44 pending", got)
	}
	late := NewChecker(Config{Now: func() time.Time { return time.Now().Add(6 * time.Minute) }})
	got = checkOnce(t, late, target).CRDs
	if got.Health != api.Unhealthy || got.State() != api.ReconciliationStale || got.OperatorFailures.NotReconciling != 44 ||
		!hasMessage(got.Messages, "44 not reconciled within 5m0s") {
		t.Fatalf("a controller that stopped writing status, 6 minutes on: %+v, want Unhealthy, Stale", got)
	}
}

// bumpSize changes the spec of the Gizmos named in ns (all of them when none are named), as their
// users would.
func bumpSize(t *testing.T, ns string, names ...string) {
	t.Helper()
	l := gizmoList()
	if err := env.Client.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		u := &l.Items[i]
		if len(names) > 0 && !contains(names, u.GetName()) {
			continue
		}
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
		_ = unstructured.SetNestedField(u.Object, size+1, "spec", "size")
		if err := env.Client.Update(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func exampleOf(s api.ReconciliationStatus, why string) *api.ResourceExample {
	for i := range s.Examples {
		if s.Examples[i].Why == why {
			return &s.Examples[i]
		}
	}
	return nil
}
