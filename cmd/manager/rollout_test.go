//go:build e2e

package main_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// operatorChart is the chart name of the test operators (charttest.OperatorChart).
const operatorChart = "widget-operator"

// uniqueName is prefix with a random suffix: the fleet outlives a test (-count, reruns), so each
// run installs its own Helm releases.
func uniqueName(prefix string) string {
	return prefix + "-" + strings.ToLower(rand.Text()[:5])
}

// operatorRepo serves versions 1.0.0 and 1.1.0 of the test operator's chart.
func operatorRepo(t *testing.T) *charttest.Repository {
	t.Helper()
	return charttest.ServeRepository(t,
		charttest.OperatorChart(operatorChart, "1.0.0", charttest.Base),
		charttest.OperatorChart(operatorChart, "1.1.0", charttest.Compatible))
}

// registerOperator is POST /api/v1/operators: operator name in namespace from repo.
func registerOperator(t *testing.T, p *proc, name, namespace, repo string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"name": name, "namespace": namespace,
		"chart": map[string]string{"repository": repo, "name": operatorChart}})
	if err != nil {
		t.Fatal(err)
	}
	p.must("POST", "/api/v1/operators", p.d.admin(), body, http.StatusCreated)
}

// registerCluster is POST /api/v1/clusters in environment env.
func registerCluster(t *testing.T, p *proc, name, env string, kubeconfig []byte) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"name": name, "environment": env, "kubeconfig": string(kubeconfig)})
	if err != nil {
		t.Fatal(err)
	}
	p.must("POST", "/api/v1/clusters", p.d.admin(), body, http.StatusCreated)
}

// postDeployment is POST /api/v1/deployments with token; it answers 202 with the deployment.
func postDeployment(t *testing.T, p *proc, token, body string) api.Deployment {
	t.Helper()
	var dep api.Deployment
	if err := json.Unmarshal(p.must("POST", "/api/v1/deployments", token, []byte(body), http.StatusAccepted).body, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.ID == "" {
		t.Fatalf("POST /api/v1/deployments answered no id: %+v", dep)
	}
	return dep
}

func getDeployment(t *testing.T, p *proc, id string) api.Deployment {
	t.Helper()
	var dep api.Deployment
	if err := json.Unmarshal(p.must("GET", "/api/v1/deployments/"+id, p.d.admin(), nil, http.StatusOK).body, &dep); err != nil {
		t.Fatal(err)
	}
	return dep
}

// waitDeployment polls GET /api/v1/deployments/{id} on p until the deployment reaches status
// (within timeout); another terminal status fails the test.
func waitDeployment(t *testing.T, p *proc, id, status string, timeout time.Duration) api.Deployment {
	t.Helper()
	terminal := []string{"Completed", "RolledBack", "Failed", "Cancelled"}
	deadline := time.Now().Add(timeout)
	for {
		dep := getDeployment(t, p, id)
		if dep.Status == status {
			return dep
		}
		if slices.Contains(terminal, dep.Status) || time.Now().After(deadline) {
			t.Fatalf("deployment %s is %s (%s), want %s\nevents:\n%s", id, dep.Status, dep.Reason, status, eventText(deploymentEvents(t, p, id)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deploymentEvents is the deployment's whole history through the API, page by page.
func deploymentEvents(t *testing.T, p *proc, id string) []api.DeploymentEvent {
	t.Helper()
	var out []api.DeploymentEvent
	cont := ""
	for {
		path := "/api/v1/deployments/" + id + "/events?limit=100"
		if cont != "" {
			path += "&continue=" + url.QueryEscape(cont)
		}
		var page api.DeploymentEventList
		if err := json.Unmarshal(p.must("GET", path, p.d.admin(), nil, http.StatusOK).body, &page); err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out
		}
		cont = page.Continue
	}
}

func eventText(evs []api.DeploymentEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %d %s %-20s %-10s %s\n", e.ID, e.Time.Format("15:04:05.000"), e.Type, e.Cluster, e.Message)
	}
	return b.String()
}

// countEvents counts the events of typ (on cluster, when not empty).
func countEvents(evs []api.DeploymentEvent, typ, cluster string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ && (cluster == "" || e.Cluster == cluster) {
			n++
		}
	}
	return n
}

// observation is the deployment's row as the watcher read it at a moment.
type observation struct {
	at       time.Time
	claimant string
	status   store.DeploymentStatus
	clusters map[string]store.ClusterStatus
}

// claimWatcher reads the deployment's row from the database every few milliseconds and keeps
// every change of its claim, status or cluster statuses.
type claimWatcher struct {
	mu   sync.Mutex
	seen []observation
	stop chan struct{}
	done chan struct{}
}

func watchClaims(t *testing.T, st store.Store, id string) *claimWatcher {
	t.Helper()
	w := &claimWatcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			d, err := st.DeploymentGetByID(context.Background(), id)
			if err != nil {
				continue
			}
			o := observation{at: time.Now(), claimant: d.ClaimedBy, status: d.Status, clusters: map[string]store.ClusterStatus{}}
			if d.LeaseUntil == nil {
				o.claimant = ""
			}
			for _, c := range d.Clusters {
				o.clusters[c.ClusterName] = c.Status
			}
			w.mu.Lock()
			if n := len(w.seen); n == 0 || !sameObservation(w.seen[n-1], o) {
				w.seen = append(w.seen, o)
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.close)
	return w
}

func sameObservation(a, b observation) bool {
	if a.claimant != b.claimant || a.status != b.status || len(a.clusters) != len(b.clusters) {
		return false
	}
	for k, v := range a.clusters {
		if b.clusters[k] != v {
			return false
		}
	}
	return true
}

func (w *claimWatcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// await returns the first observation (from now on, or already seen last) for which cond
// holds, within timeout.
func (w *claimWatcher) await(t *testing.T, what string, timeout time.Duration, cond func(o observation) bool) observation {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		var last *observation
		if n := len(w.seen); n > 0 {
			last = &w.seen[n-1]
		}
		if last != nil && cond(*last) {
			o := *last
			w.mu.Unlock()
			return o
		}
		w.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s: not seen within %s; seen:\n%s", what, timeout, w.text())
	return observation{}
}

// after is every observation from t on.
func (w *claimWatcher) after(at time.Time) []observation {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []observation
	for _, o := range w.seen {
		if !o.at.Before(at) {
			out = append(out, o)
		}
	}
	return out
}

func (w *claimWatcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, o := range w.seen {
		fmt.Fprintf(&b, "  %s claim=%q %s %v\n", o.at.Format("15:04:05.000"), o.claimant, o.status, o.clusters)
	}
	return b.String()
}

// haSetup is three replicas over one PostgreSQL database with two Dev clusters and an operator,
// and a Production cluster (the second server again) with an operator of its own, whose
// deployments wait for approval.
type haSetup struct {
	d        *deployment
	replicas map[string]*proc
	clusters []string
	operator string
	ns       string
	prod     string
	prodOp   string
}

func newHASetup(t *testing.T, operator string) *haSetup {
	t.Helper()
	f := fleet(t, 2)
	h := &haSetup{d: newDeployment(t, "postgres"), replicas: map[string]*proc{}, operator: operator, ns: operator}
	for _, id := range []string{"r1", "r2", "r3"} {
		h.replicas[id] = h.d.serve("--insecure-http", "--replica-id="+id, "--deployment-lease=3s",
			"--operator-health-interval=2s", "--install-timeout=2m")
	}
	r1 := h.replicas["r1"]
	for i, srv := range f.Servers[:2] {
		name := fmt.Sprintf("%s-dev-%d", operator, i+1)
		registerCluster(t, r1, name, "Dev", srv.Kubeconfig)
		h.clusters = append(h.clusters, name)
	}
	h.prod, h.prodOp = operator+"-prod", operator+"-p"
	registerCluster(t, r1, h.prod, "Production", f.Servers[1].Kubeconfig)
	repo := operatorRepo(t).URL
	registerOperator(t, r1, operator, h.ns, repo)
	registerOperator(t, r1, h.prodOp, h.prodOp, repo)
	return h
}

// other returns a live replica other than victim.
func (h *haSetup) other(victim string) *proc {
	for _, id := range []string{"r1", "r2", "r3"} {
		if id != victim {
			return h.replicas[id]
		}
	}
	return nil
}

// awaitPendingRelease waits (30 s at most) until the first cluster's Helm release exists but is
// not deployed yet, and returns it at once: the caller kills the install's replica right away,
// while the install is (most likely) still in flight.
func (h *haSetup) awaitPendingRelease(t *testing.T) *install.ReleaseInfo {
	t.Helper()
	cfg := fleet(t, 2).Servers[0].Config
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		rel, err := install.Status(context.Background(), cfg, h.operator, h.ns)
		if err == nil && strings.HasPrefix(rel.Status, "pending") {
			return rel
		}
		if err == nil {
			t.Fatalf("the release reached %s (revision %d) before it was seen pending", rel.Status, rel.Revision)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the first cluster's release was not written within 30s")
	return nil
}

// rollingBody is the Rolling deployment of version to the setup's clusters, in their order.
func (h *haSetup) rollingBody(version string) string {
	order, _ := json.Marshal(h.clusters)
	return fmt.Sprintf(`{"operator": %q, "version": %q, "clusters": %s, "strategy": "Rolling",
		"rollingConfig": {"clusterOrder": %s, "validationPeriod": "PT5S", "pauseBetweenClusters": "PT0S"}}`,
		h.operator, version, order, order)
}

// TestHA_ReplicaKilledMidRollout runs three manager processes over one PostgreSQL database and
// kills (SIGKILL) the replica driving a Rolling deployment, once while the first cluster is
// validating and once while its install is in flight. Another replica takes the deployment over
// when the lease lapses and completes it; every cluster runs the new version with one deployed
// Helm revision of it; the history is whole; nothing the API had shown is lost, and a Production
// deployment that waited for approval through the death is approved through a survivor and
// completes. The takeover time (kill → another replica's claim) is logged, not asserted.
func TestHA_ReplicaKilledMidRollout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		operator string
		// killWhen is the first cluster's status at which its claimant is killed; with
		// releaseWritten, once the install in flight has also written its Helm release (pending
		// until the operator's Deployment is Available).
		killWhen       store.ClusterStatus
		releaseWritten bool
	}{
		{"validating", "ha-val", store.ClusterValidating, false},
		{"installing", "ha-inst", store.ClusterInstalling, false},
		{"helm-pending", "ha-pend", store.ClusterInstalling, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHASetup(t, uniqueName(tc.operator))
			admin := h.d.admin()
			// A Production deployment waiting for approval while the replica dies.
			waiting := postDeployment(t, h.replicas["r3"], admin, fmt.Sprintf(
				`{"operator": %q, "version": "1.0.0", "clusters": [%q], "strategy": "Direct"}`, h.prodOp, h.prod))
			waitDeployment(t, h.replicas["r3"], waiting.ID, "WaitingApproval", time.Minute)
			approval := pendingApproval(t, h.replicas["r3"], waiting.ID)

			dep := postDeployment(t, h.replicas["r2"], admin, h.rollingBody("1.0.0"))
			w := watchClaims(t, h.d.openStore(), dep.ID)
			first := h.clusters[0]

			// The replica holding the claim while the first cluster is in killWhen.
			held := w.await(t, "a claimed deployment with "+first+" "+string(tc.killWhen), 2*time.Minute, func(o observation) bool {
				return o.claimant != "" && o.clusters[first] == tc.killWhen
			})
			victim := held.claimant
			var pending *install.ReleaseInfo
			if tc.releaseWritten {
				pending = h.awaitPendingRelease(t)
			}
			h.replicas[victim].Kill()
			killedAt := time.Now()
			if pending != nil {
				t.Logf("release %s/%s revision %d was %s when %s was killed", h.ns, h.operator, pending.Revision, pending.Status, victim)
			}
			survivor := h.other(victim)
			row, err := h.d.openStore().DeploymentGetByID(context.Background(), dep.ID)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("killed %s (claim seen %s before the kill) with %s %s; the row then: claim %q until %v",
				victim, killedAt.Sub(held.at).Round(time.Millisecond), first, tc.killWhen, row.ClaimedBy, row.LeaseUntil)
			eventsAtKill := deploymentEvents(t, survivor, dep.ID)
			installedAtKill := slices.ContainsFunc(eventsAtKill, func(e api.DeploymentEvent) bool { return e.Type == "cluster.installed" && e.Cluster == first })
			// The claim is the victim's, unless the install ended before the SIGKILL landed (the
			// claim may then have been given back, and taken by another replica).
			if tc.killWhen == store.ClusterInstalling && row.ClaimedBy != victim && !installedAtKill {
				t.Fatalf("the install of %s was in flight under %s's claim, but the row says %q after the kill", first, victim, row.ClaimedBy)
			}
			listAtKill := survivor.must("GET", "/api/v1/deployments", admin, nil, http.StatusOK).body

			done := waitDeployment(t, survivor, dep.ID, "Completed", 3*time.Minute)
			w.close()

			// Who went on, and when.
			var takeover *observation
			for _, o := range w.after(killedAt) {
				if o.claimant == victim && takeover != nil {
					t.Fatalf("the killed replica %s holds the claim again after %s took over:\n%s", victim, takeover.claimant, w.text())
				}
				if o.claimant != "" && o.claimant != victim && takeover == nil {
					takeover = &o
				}
			}
			if takeover == nil {
				t.Fatalf("no other replica claimed the deployment after %s died:\n%s", victim, w.text())
			}
			evs := deploymentEvents(t, survivor, dep.ID)
			var nextStep time.Time
			for _, e := range evs {
				if e.Time.After(killedAt) {
					nextStep = e.Time
					break
				}
			}
			t.Logf("takeover: %s killed → claimed by %s after %s; next step recorded after %s (lease 3s)",
				victim, takeover.claimant, takeover.at.Sub(killedAt).Round(time.Millisecond), nextStep.Sub(killedAt).Round(time.Millisecond))
			completedBy := ""
			for id, p := range h.replicas {
				if logMentions(p.stderr.Bytes(), dep.ID, "Deployment Completed") {
					completedBy = id
				}
			}
			if completedBy == "" || completedBy == victim {
				t.Fatalf("the completion was logged by %q, want a replica other than the killed %s", completedBy, victim)
			}

			// A SIGKILL lands a little after the decision to send it: the dead replica may have
			// finished the install and recorded it in between. What it recorded decides what the
			// attempts must look like.
			killedMidInstall := tc.killWhen == store.ClusterInstalling && !installedAtKill
			if tc.killWhen == store.ClusterInstalling && !killedMidInstall {
				t.Logf("%s had recorded %s's install before the kill landed", victim, first)
			}
			checkHARollout(t, h, done, evs, killedMidInstall)

			// Nothing the API showed before the kill is lost.
			for _, before := range eventsAtKill {
				i := slices.IndexFunc(evs, func(e api.DeploymentEvent) bool { return e.ID == before.ID })
				if i < 0 || evs[i].Type != before.Type || evs[i].Message != before.Message {
					t.Fatalf("event %d (%s: %s) shown before the kill is gone or changed", before.ID, before.Type, before.Message)
				}
			}
			var list api.DeploymentList
			if err := json.Unmarshal(listAtKill, &list); err != nil {
				t.Fatal(err)
			}
			if ids := deploymentIDs(list); !slices.Equal(ids, []string{dep.ID, waiting.ID}) && !slices.Equal(ids, []string{waiting.ID, dep.ID}) {
				t.Fatalf("deployments listed at the kill: %s", listAtKill)
			}
			var after api.DeploymentList
			if err := json.Unmarshal(survivor.must("GET", "/api/v1/deployments", admin, nil, http.StatusOK).body, &after); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(deploymentIDs(after), deploymentIDs(list)) {
				t.Fatalf("deployments after the takeover: %v, at the kill: %v", deploymentIDs(after), deploymentIDs(list))
			}
			checkOperatorHealthy(t, survivor, h.operator, h.clusters)

			// The approval waited through the death of a replica: still pending, the same one;
			// approved through a survivor, its deployment completes.
			if still := pendingApproval(t, survivor, waiting.ID); still.ID != approval.ID || still.Kind != approval.Kind {
				t.Fatalf("the pending approval changed over the kill: %+v, before %+v", still, approval)
			}
			survivor.must("POST", "/api/v1/approvals/"+approval.ID+"/approve", h.d.token("bob", auth.Admin), []byte(`{"comment": "ok"}`), http.StatusOK)
			approved := waitDeployment(t, survivor, waiting.ID, "Completed", 2*time.Minute)
			rel, err := install.History(context.Background(), fleet(t, 2).Servers[1].Config, h.prodOp, h.prodOp)
			if err != nil || len(rel) != 1 || rel[0].Status != "deployed" || approved.Clusters[0].HelmRevision != 1 {
				t.Fatalf("the approved deployment's release: %s (%v); deployment revision %d", historyText(rel), err, approved.Clusters[0].HelmRevision)
			}
		})
	}
}

// checkHARollout checks a completed Rolling deployment after a replica died: each cluster
// healthy, installed by as many attempts as its history says, with exactly one deployed Helm
// revision of the version; the history continuous.
func checkHARollout(t *testing.T, h *haSetup, dep api.Deployment, evs []api.DeploymentEvent, killedMidInstall bool) {
	t.Helper()
	f := fleet(t, 2)
	if len(dep.Clusters) != len(h.clusters) {
		t.Fatalf("deployment has %d clusters, want %d", len(dep.Clusters), len(h.clusters))
	}
	for i, name := range h.clusters {
		c := dep.Clusters[slices.IndexFunc(dep.Clusters, func(c api.DeploymentCluster) bool { return c.Name == name })]
		if c.Status != "healthy" {
			t.Errorf("%s: status %s (%s), want healthy", name, c.Status, c.Message)
		}
		hist, err := install.History(context.Background(), f.Servers[i].Config, c.Release, c.Namespace)
		if err != nil {
			t.Fatalf("%s: Helm history of %s/%s: %v", name, c.Namespace, c.Release, err)
		}
		var deployed, ofVersion []install.ReleaseInfo
		for _, r := range hist {
			if r.ChartVersion == dep.Version {
				ofVersion = append(ofVersion, r)
				if r.Status == "deployed" {
					deployed = append(deployed, r)
				}
			}
		}
		t.Logf("%s: %d install attempt(s), Helm history %s", name, c.InstallAttempts, historyText(hist))
		if len(deployed) != 1 || deployed[0].Revision != c.HelmRevision {
			t.Errorf("%s: deployed revisions of %s %s, want exactly one, revision %d", name, dep.Version, historyText(hist), c.HelmRevision)
		}
		installing := countEvents(evs, "cluster.installing", name)
		adopted := countEvents(evs, "cluster.adopted", name)
		if installing != c.InstallAttempts {
			t.Errorf("%s: %d cluster.installing events, %d install attempts recorded", name, installing, c.InstallAttempts)
		}
		if n := countEvents(evs, "cluster.installed", name); n != 1 {
			t.Errorf("%s: %d cluster.installed events, want 1 (one install per step)", name, n)
		}
		switch {
		case i > 0 || !killedMidInstall:
			// Installed once, by one replica, before or after the kill.
			if c.InstallAttempts != 1 || len(ofVersion) != 1 || adopted != 0 {
				t.Errorf("%s: %d attempts, %d revisions of %s, %d adoptions; want 1, 1, 0", name, c.InstallAttempts, len(ofVersion), dep.Version, adopted)
			}
		default:
			// Killed mid-install: the successor either adopted what the dead attempt completed
			// (1 attempt) or installed again (2 attempts); a revision the dead attempt left pending
			// may precede the deployed one.
			if !(c.InstallAttempts == 1 && adopted == 1) && !(c.InstallAttempts == 2 && adopted == 0) {
				t.Errorf("%s: %d attempts and %d adoptions after a kill mid-install; want 2 attempts, or 1 adopted", name, c.InstallAttempts, adopted)
			}
			if len(ofVersion) > 2 {
				t.Errorf("%s: %d revisions of %s: more than the dead attempt's and its successor's", name, len(ofVersion), dep.Version)
			}
		}
	}
	checkHistory(t, evs, len(h.clusters))
	if t.Failed() {
		t.Logf("events:\n%s", eventText(evs))
	}
}

// checkHistory checks the events are in order, each Rolling stage validated and passed once,
// and the status transitions join up from Planning to Completed.
func checkHistory(t *testing.T, evs []api.DeploymentEvent, stages int) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Errorf("events out of order: %d after %d", evs[i].ID, evs[i-1].ID)
		}
	}
	if n := countEvents(evs, "stage.passed", ""); n != stages {
		t.Errorf("%d stage.passed events, want %d", n, stages)
	}
	prev := ""
	for _, e := range evs {
		if e.Type != "status" {
			continue
		}
		var tr struct{ From, To string }
		if err := json.Unmarshal(e.Details, &tr); err != nil {
			t.Fatalf("status event %d details %s: %v", e.ID, e.Details, err)
		}
		// Deploying → Validating is the last stage's hold starting: a status change without an
		// event of its own.
		if prev != "" && tr.From != prev && !(prev == "Deploying" && tr.From == "Validating") {
			t.Errorf("status history has a gap: → %s, then %s → %s", prev, tr.From, tr.To)
		}
		prev = tr.To
	}
	if prev != "Completed" {
		t.Errorf("the last status event goes to %q, want Completed", prev)
	}
}

func deploymentIDs(l api.DeploymentList) []string {
	var ids []string
	for _, d := range l.Items {
		ids = append(ids, d.ID)
	}
	return ids
}

func historyText(hist []install.ReleaseInfo) string {
	var parts []string
	for _, r := range hist {
		parts = append(parts, fmt.Sprintf("%d:%s:%s", r.Revision, r.ChartVersion, r.Status))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// logMentions tells whether a log line holds both the id and msg.
func logMentions(log []byte, id, msg string) bool {
	for _, line := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(line, []byte(id)) && bytes.Contains(line, []byte(msg)) {
			return true
		}
	}
	return false
}

// checkOperatorHealthy waits (30 s at most) for GET /api/v1/operators/{name}/health to say
// Healthy on every cluster.
func checkOperatorHealthy(t *testing.T, p *proc, operator string, clusterNames []string) {
	t.Helper()
	var oh struct {
		OverallHealth string
		Clusters      []struct{ ClusterName, Health string }
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := p.must("GET", "/api/v1/operators/"+operator+"/health", p.d.admin(), nil, http.StatusOK)
		if err := json.Unmarshal(r.body, &oh); err != nil {
			t.Fatal(err)
		}
		healthy := 0
		for _, c := range oh.Clusters {
			if slices.Contains(clusterNames, c.ClusterName) && c.Health == "Healthy" {
				healthy++
			}
		}
		if oh.OverallHealth == "Healthy" && healthy == len(clusterNames) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("operator %s health: %s", operator, r.body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
