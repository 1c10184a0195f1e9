package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestCancel_StopsBetweenClusters cancels a Rolling deployment while it pauses after its first
// cluster: it ends Cancelled, the first cluster keeps the new version, the second is never touched.
func TestCancel_StopsBetweenClusters(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "c-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "c-2", Environment: store.EnvironmentDev, Server: s[1]},
	}, nil)
	h.operator("cancel", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "cancel", "version": "1.0.0", "clusters": ["c-1", "c-2"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT0S", "pauseBetweenClusters": "PT1M"}}`)
	h.wait(d.ID, "first cluster healthy", func(d *store.Deployment) bool { return clusterByName(d, "c-1").Status == store.ClusterHealthy })
	if _, err := h.eng.Cancel(context.Background(), d.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	d = h.waitStatus(d.ID, store.DeploymentCancelled)
	if c := clusterByName(d, "c-2"); c.Status != store.ClusterSkipped || c.InstallAttempts != 0 {
		t.Errorf("c-2 %+v, want skipped", c)
	}
	if !strings.Contains(d.Reason, "1 of 2 clusters run 1.0.0") {
		t.Errorf("reason %q", d.Reason)
	}
	if _, err := h.eng.Cancel(context.Background(), d.ID, "alice"); err == nil {
		t.Error("cancelling a cancelled deployment succeeded")
	}
}

// TestQueue_LimitHoldsDeploymentsBack: with a limit of one running deployment, a second waits
// Queued until the first ends, then runs.
func TestQueue_LimitHoldsDeploymentsBack(t *testing.T) {
	h := newHarness(t, []target{{Name: "q-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.MaxConcurrent = 1
	})
	h.operator("qa", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.operator("qb", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	a := h.submit(`{"operator": "qa", "version": "1.0.0", "clusters": ["q-1"], "strategy": "Rolling", "rollingConfig": {"validationPeriod": "PT3S"}}`)
	h.wait(a.ID, "running", func(d *store.Deployment) bool {
		return d.Status == store.DeploymentDeploying || d.Status == store.DeploymentValidating
	})
	b := h.submit(`{"operator": "qb", "version": "1.0.0", "clusters": ["q-1"], "strategy": "Direct"}`)
	time.Sleep(time.Second)
	if got, _ := h.store.DeploymentGetByID(context.Background(), b.ID); got.Status != store.DeploymentQueued {
		t.Fatalf("the second deployment is %s while the first runs, want Queued", got.Status)
	}
	a = h.waitStatus(a.ID, store.DeploymentCompleted)
	h.waitStatus(b.ID, store.DeploymentCompleted)
	if admitted := h.eventAt(b.ID, "admitted", ""); admitted.Before(*a.FinishedAt) {
		t.Errorf("the second was admitted at %s, before the first finished at %s", admitted, a.FinishedAt)
	}
}

// TestApprovals_RejectedOrExpiredNeverExecutes: a Production deployment whose approval is
// rejected fails without installing anything; one whose approval expires does too.
func TestApprovals_RejectedOrExpiredNeverExecutes(t *testing.T) {
	h := newHarness(t, []target{{Name: "prod-x", Environment: store.EnvironmentProduction, Server: single(t)}}, func(c *Config) {
		c.ApprovalTTL = 3 * time.Second
	})
	h.operator("appr", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	ctx := context.Background()
	d := h.submit(`{"operator": "appr", "version": "1.0.0", "clusters": ["prod-x"], "strategy": "Direct"}`)
	h.wait(d.ID, "waiting for approval", func(d *store.Deployment) bool { return d.Status == store.DeploymentWaitingApproval })
	list, err := h.store.ApprovalList(ctx, &store.ApprovalListParams{DeploymentID: d.ID, Limit: 10})
	if err != nil || len(list) != 1 {
		t.Fatalf("approvals %v %v", list, err)
	}
	if _, err := h.store.ApprovalDecide(ctx, &store.ApprovalDecision{ApprovalID: list[0].ID, Actor: "carol", Approve: false, Comment: "not this week"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	d = h.waitStatus(d.ID, store.DeploymentFailed)
	if !strings.Contains(d.Reason, "rejected by carol: not this week") {
		t.Errorf("reason %q", d.Reason)
	}
	if _, err := install.Status(ctx, h.admin["prod-x"], "appr", "op-appr"); !isNotFound(err) {
		t.Errorf("a rejected deployment installed something (err %v)", err)
	}

	e := h.submit(`{"operator": "appr", "version": "1.0.0", "clusters": ["prod-x"], "strategy": "Direct"}`)
	e = h.waitStatus(e.ID, store.DeploymentFailed)
	if !strings.Contains(e.Reason, "expired") {
		t.Errorf("reason %q, want expired", e.Reason)
	}
	if _, err := install.Status(ctx, h.admin["prod-x"], "appr", "op-appr"); !isNotFound(err) {
		t.Errorf("an expired deployment installed something (err %v)", err)
	}
	// The audit log holds both approvals' history: two requests and one expiry (the decision
	// is audited by the API, not here).
	entries, err := h.store.AuditList(ctx, &store.AuditListParams{TargetKind: "approval", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, a := range entries {
		actions[a.Action]++
	}
	if actions["approval.request"] != 2 || actions["approval.expire"] != 1 {
		t.Errorf("audit actions %v, want 2 approval.request and 1 approval.expire", actions)
	}
}

// TestTakeover_AnotherReplicaFinishes: the replica driving a deployment stops mid-hold without
// releasing it; once its lease lapses, another replica claims it and completes it, and no
// cluster is installed twice.
func TestTakeover_AnotherReplicaFinishes(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "t-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "t-2", Environment: store.EnvironmentDev, Server: s[1]},
	}, nil)
	h.operator("takeover", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "takeover", "version": "1.0.0", "clusters": ["t-1", "t-2"], "strategy": "Rolling",
		"rollingConfig": {"validationPeriod": "PT4S"}}`)
	h.wait(d.ID, "t-1 validating", func(d *store.Deployment) bool { return clusterByName(d, "t-1").Status == store.ClusterValidating })
	h.eng.Stop()

	h.replica("replica-b")
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	for _, c := range d.Clusters {
		if c.InstallAttempts != 1 || c.HelmRevision != 1 {
			t.Errorf("cluster %s: %d install attempts, revision %d; want one install", c.ClusterName, c.InstallAttempts, c.HelmRevision)
		}
		hist, err := install.History(context.Background(), h.admin[c.ClusterName], "takeover", "op-takeover")
		if err != nil || len(hist) != 1 {
			t.Errorf("cluster %s: Helm history %v (%v), want one revision", c.ClusterName, hist, err)
		}
	}
}

// TestAdopt_InstallDoneByADeadAttempt: a replica died after Helm installed the release but before
// recording it; the next attempt finds the release at the version and adopts it instead of
// installing again.
func TestAdopt_InstallDoneByADeadAttempt(t *testing.T) {
	h := newHarness(t, []target{{Name: "a-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	op := h.operator("adopt", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	ctx := context.Background()
	d := h.submit(`{"operator": "adopt", "version": "1.0.0", "clusters": ["a-1"], "strategy": "Direct"}`)
	// What the dead replica did: admitted, planned, recorded the attempt, installed.
	if _, err := h.store.DeploymentAdmit(ctx, &store.DeploymentAdmitParams{Limit: 20, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.DeploymentUpdate(ctx, d.ID, func(d *store.Deployment) error {
		now := time.Now()
		d.Status, d.StartedAt = store.DeploymentDeploying, &now
		d.Clusters[0].Status, d.Clusters[0].InstallAttempts = store.ClusterInstalling, 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ch, err := h.eng.chartOf(ctx, op, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := install.Install(ctx, h.admin["a-1"], install.Release{Name: "adopt", Namespace: "op-adopt", Chart: ch.chart}); err != nil {
		t.Fatal(err)
	}
	h.start()
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	if c := d.Clusters[0]; c.HelmRevision != 1 || c.InstallAttempts != 1 {
		t.Errorf("cluster %+v, want revision 1 adopted without another attempt", c)
	}
	hist, err := install.History(ctx, h.admin["a-1"], "adopt", "op-adopt")
	if err != nil || len(hist) != 1 {
		t.Errorf("Helm history %v (%v), want the one revision", hist, err)
	}
	if h.eventAt(d.ID, "cluster.adopted", "a-1").IsZero() {
		t.Error("no adoption event")
	}
}

// TestQueue_ManySubmittedAtOnceAllComplete submits twelve deployments at once against a limit of
// three: every one is admitted in turn and completes (none is left behind by a race between
// admission and a step, and no more than three run at once).
func TestQueue_ManySubmittedAtOnceAllComplete(t *testing.T) {
	h := newHarness(t, []target{{Name: "m-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.MaxConcurrent = 3
	})
	const n = 12
	for i := range n {
		h.operator(fmt.Sprintf("many%02d", i), charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	}
	h.start()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ids[i] = h.submit(fmt.Sprintf(`{"operator": "many%02d", "version": "1.0.0", "clusters": ["m-1"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`, i)).ID
		})
	}
	wg.Wait()
	var done []*store.Deployment
	for _, id := range ids {
		done = append(done, h.waitStatus(id, store.DeploymentCompleted))
	}
	// The most running at one instant: a sweep over start and end times (an end first on a tie).
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, d := range done {
		edges = append(edges, edge{*d.StartedAt, 1}, edge{*d.FinishedAt, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta
		}
		return edges[i].at.Before(edges[j].at)
	})
	running, most := 0, 0
	for _, e := range edges {
		running += e.delta
		most = max(most, running)
	}
	if most > 3 {
		t.Errorf("%d deployments ran at once, limit 3", most)
	}
	t.Logf("at most %d of %d deployments ran at once", most, n)
}

// TestRelease_AdmittedMeanwhileStaysDue: a queued deployment is not due until admitted; a
// step that started from Queued and releases its claim after another replica admitted the
// deployment leaves it due, not asleep (a race seen with 20 deployments submitted at once).
func TestRelease_AdmittedMeanwhileStaysDue(t *testing.T) {
	h := newHarness(t, []target{{Name: "r-1", Environment: store.EnvironmentDev, Server: single(t)}}, nil)
	h.operator("rel", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	ctx := context.Background()
	d := h.submit(`{"operator": "rel", "version": "1.0.0", "clusters": ["r-1"], "strategy": "Direct"}`)
	if d.NextRunAt != nil {
		t.Fatalf("a queued deployment is due at %v: only admission makes it due", d.NextRunAt)
	}
	// Claimed (say, to cancel it) while Queued, and admitted by another replica meanwhile.
	if _, err := h.store.DeploymentUpdate(ctx, d.ID, func(d *store.Deployment) error {
		until := time.Now().Add(time.Minute)
		d.ClaimedBy, d.LeaseUntil = h.cfg.ReplicaID, &until
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if res, err := h.store.DeploymentAdmit(ctx, &store.DeploymentAdmitParams{Limit: 20, Now: time.Now()}); err != nil || len(res.Admitted) != 1 {
		t.Fatalf("admit: %+v %v", res, err)
	}
	h.eng.release(ctx, d, -1)
	got, err := h.store.DeploymentGetByID(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.DeploymentPlanning || got.NextRunAt == nil || got.ClaimedBy != "" {
		t.Fatalf("after the release: status %s, due %v, claimed by %q; want Planning, due, unclaimed", got.Status, got.NextRunAt, got.ClaimedBy)
	}
}
