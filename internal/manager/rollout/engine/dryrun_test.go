package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// stored counts what the store holds: deployments, approvals, audit entries and the events of
// every deployment, to show a dry run wrote nothing.
type stored struct{ deployments, approvals, audit, events int }

func (h *harness) stored() stored {
	h.t.Helper()
	ctx := context.Background()
	ds, err := h.store.DeploymentList(ctx, &store.DeploymentListParams{Limit: store.MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	as, err := h.store.ApprovalList(ctx, &store.ApprovalListParams{Limit: store.MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	audit, err := h.store.AuditList(ctx, &store.AuditListParams{Limit: store.MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	out := stored{deployments: len(ds), approvals: len(as), audit: len(audit)}
	for _, d := range ds {
		out.events += len(h.events(d.ID))
	}
	return out
}

// dryRun runs a dry run of body as alice.
func (h *harness) dryRun(body string) (*api.DryRun, error) {
	h.t.Helper()
	req, err := api.DecodeDeploymentRequest([]byte(body))
	if err != nil {
		h.t.Fatal(err)
	}
	return h.eng.DryRun(context.Background(), req, "alice", "req-dry")
}

// TestDryRun_SamePlanNothingStored: a dry run of an upgrade whose CRD change breaks, to a Dev
// and a Production cluster, stores nothing and answers the stages, the CRD report per cluster
// and the approvals; the real request then gets the same stages and asks the same approvals.
// A version a cluster runs already is named; an unreachable cluster is the failure planning
// would end with; and bad requests are refused with Submit's errors.
func TestDryRun_SamePlanNothingStored(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "dry-dev", Environment: store.EnvironmentDev, Server: s[1]},
		{Name: "dry-prod", Environment: store.EnvironmentProduction, Server: s[0]},
	}, nil)
	h.operator("dryop", crdChart("1.0.0", "drywidgets", "DryWidget", charttest.Base), crdChart("1.0.1", "drywidgets", "DryWidget", charttest.Breaking))
	h.start()
	first := h.submit(`{"operator": "dryop", "version": "1.0.0", "clusters": ["dry-dev"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(first.ID, store.DeploymentCompleted)
	const crd = "drywidgets." + charttest.Group
	const upgrade = `{"operator": "dryop", "version": "1.0.1", "clusters": ["dry-prod", "dry-dev"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT0S"}}`

	before := h.stored()
	dry, err := h.dryRun(upgrade)
	if err != nil {
		t.Fatal(err)
	}
	if after := h.stored(); after != before {
		t.Fatalf("the dry run stored something: %+v, then %+v", before, after)
	}
	if !dry.DryRun || dry.WouldFail != "" || len(dry.AlreadyRunning) != 0 || len(dry.Stages) != 2 {
		t.Fatalf("dry run %+v", dry)
	}
	if got := [][]string{dry.Stages[0].Clusters, dry.Stages[1].Clusters}; !slices.Equal(got[0], []string{"dry-dev"}) || !slices.Equal(got[1], []string{"dry-prod"}) {
		t.Errorf("stages %v, want dry-dev then dry-prod (environment order)", got)
	}
	dev := dry.Clusters[slices.IndexFunc(dry.Clusters, func(c api.DryRunCluster) bool { return c.Name == "dry-dev" })]
	if dev.InstalledVersion != "1.0.0" || dev.RunsVersion || dev.Problem != "" || len(dev.CRDs) != 1 ||
		dev.CRDs[0].Name != crd || dev.CRDs[0].Status != "breaking" || len(dev.CRDs[0].Changes) == 0 {
		t.Errorf("dry-dev %+v", dev)
	}
	var kinds []string
	for _, a := range dry.Approvals {
		kinds = append(kinds, a.Kind)
	}
	for _, want := range []string{approvals.KindBreakingCRD, approvals.KindProduction} {
		if !slices.Contains(kinds, want) {
			t.Errorf("approvals %v lack %s", kinds, want)
		}
	}
	if !slices.ContainsFunc(dry.Events, func(e api.DryRunEvent) bool { return e.Type == "crd.breaking" && strings.Contains(e.Message, crd) }) {
		t.Errorf("events %+v, want crd.breaking", dry.Events)
	}

	// The real request: the same stages, then the same approvals.
	d := h.submit(upgrade)
	for _, c := range d.Clusters {
		if st := dry.Stages[c.Stage]; !slices.Contains(st.Clusters, c.ClusterName) {
			t.Errorf("cluster %s is in stage %d, the dry run had it elsewhere: %+v", c.ClusterName, c.Stage, dry.Stages)
		}
	}
	h.wait(d.ID, "waiting for approval", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentWaitingApproval || d.Status.Terminal()
	})
	asked, err := h.store.ApprovalList(context.Background(), &store.ApprovalListParams{DeploymentID: d.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, a := range asked {
		got = append(got, a.Kind+"/"+a.RequiredRole+"/"+a.Reason)
	}
	for _, a := range dry.Approvals {
		want = append(want, a.Kind+"/"+a.RequiredRole+"/"+a.Reason)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the deployment asked\n%v\nthe dry run said\n%v", got, want)
	}

	// The version a cluster runs already; an unreachable cluster; Submit's errors.
	again, err := h.dryRun(`{"operator": "dryop", "version": "1.0.0", "clusters": ["dry-dev"], "strategy": "Direct"}`)
	if err == nil || !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), d.ID) {
		t.Errorf("a dry run to a cluster with an active deployment: %+v, %v; want the 409 naming %s", again, err, d.ID)
	}
	kubeconfig, proxy := proxied(t, s[0])
	if _, err := h.clusters.Register(context.Background(), clusters.RegisterParams{Name: "dry-gone", Environment: store.EnvironmentDev, Kubeconfig: kubeconfig}); err != nil {
		t.Fatal(err)
	}
	proxy.Close()
	h.operator("dryother", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	gone, err := h.dryRun(`{"operator": "dryother", "version": "1.0.0", "clusters": ["dry-gone"], "strategy": "Direct"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(gone.WouldFail, "clusters not ready for the deployment: cluster dry-gone unreachable") ||
		gone.Clusters[0].Problem == "" || len(gone.Approvals) != 0 {
		t.Errorf("dry run to an unreachable cluster: %+v", gone)
	}
	for _, body := range []string{
		`{"operator": "dryop", "version": "9.9.9", "clusters": ["dry-prod"], "strategy": "Direct"}`,
		`{"operator": "dryop", "version": "1.0.1", "clusters": ["dry-prod", "nowhere"], "strategy": "Direct"}`,
		`{"operator": "nobody", "version": "1.0.1", "clusters": ["dry-prod"], "strategy": "Direct"}`,
		`{"operator": "dryother", "version": "1.0.0", "clusters": ["dry-prod"], "strategy": "BlueGreen"}`,
	} {
		_, dryErr := h.dryRun(body)
		realErr := h.submitErr(body)
		de, ok1 := invalid.As(dryErr)
		re, ok2 := invalid.As(realErr)
		if !ok1 || !ok2 || de.Error() != re.Error() || de.Field != re.Field {
			t.Errorf("%s: dry run %v, real %v; want the same invalid input error", body, dryErr, realErr)
		}
	}
	if after := h.stored(); after.deployments != before.deployments+1 {
		t.Errorf("deployments %d, want %d: only the real request stored one", after.deployments, before.deployments+1)
	}
}
