//go:build e2e

package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The rollout benchmarks (issue 12 §7) run the built binary with its shipped defaults plus only
// what a benchmark needs (a database, the JWT secret, a key, --insecure-http, --metrics-address on
// a known free port, and --approval-environments=Staging,Production: by default every upgrade
// waits for an Admin, and the benchmarks measure the rollout, not people) against
// rolloutClusters real kube-apiservers of the test binary's workload fleet
// (testenv.WorkloadFleet: a controller-manager, scheduler and kwok node per server, so an
// operator's Deployment becomes Available as in a real cluster). Clusters (Dev) and operators are
// registered through the API; the operator is charttest's small chart (a CRD, a ServiceAccount,
// RBAC and a one-replica Deployment) from an HTTP chart repository, versions 1.0.0 and 1.0.1 (a
// patch with a compatible CRD change: no approval with Dev's workflow off). Every run registers
// operators under new names, so releases left in the shared fleet by earlier runs are never
// touched.
//
//	make bench BENCH=Rollout TEST_PKGS=./cmd/manager
//	go test -tags e2e ./cmd/manager -run '^$' -bench 'Rollout' -benchtime=1x -timeout=60m

// rolloutClusters is the fleet's size: the design's 10 clusters.
const rolloutClusters = 10

// rolloutRun numbers the operators registered by this test binary, across benchmarks.
var rolloutRun atomic.Int64

// rolloutBench is one manager serving over a fresh database, with the fleet's clusters registered.
type rolloutBench struct {
	b        *testing.B
	d        *deployment
	p        *proc
	metrics  string // the /metrics URL
	admin    string
	clusters []string
	repo     *charttest.Repository
	subjects atomic.Int64 // users minted so far: POST /deployments allows 10 a minute per user
}

// newRolloutBench starts the fleet (first use), a chart repository with the operator chart's
// versions and the binary, and registers the clusters.
func newRolloutBench(b *testing.B, engine string, charts []charttest.ChartFiles) *rolloutBench {
	b.Helper()
	f := testenv.WorkloadFleet(b, rolloutClusters)
	r := &rolloutBench{b: b, d: newDeployment(b, engine), repo: charttest.ServeRepository(b, charts...)}
	addr := testenv.FreeAddr(b)
	r.metrics = "http://" + addr + "/metrics"
	r.p = r.d.serve("--insecure-http", "--metrics-address="+addr, "--approval-environments=Staging,Production")
	r.admin = r.d.admin()
	for i, s := range f.Servers {
		name := fmt.Sprintf("c%02d", i)
		// POST /clusters allows 5 a minute per user: one admin each.
		r.p.must("POST", "/api/v1/clusters", r.d.token(fmt.Sprintf("registrar-%d", i), auth.Admin),
			clusterBody(b, name, s.Kubeconfig), http.StatusCreated)
		r.clusters = append(r.clusters, name)
	}
	return r
}

// operators registers n operators over the repository's chart and returns their names, new in
// the test binary (tag names the benchmark).
func (r *rolloutBench) operators(tag string, n int) []string {
	r.b.Helper()
	run := rolloutRun.Add(1)
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d-%02d", tag, run, i)
		r.p.must("POST", "/api/v1/operators", r.admin, []byte(fmt.Sprintf(
			`{"name":%q,"namespace":%q,"chart":{"repository":%q,"name":%q}}`, names[i], "op-"+names[i], r.repo.URL, benchChart)),
			http.StatusCreated)
	}
	return names
}

// benchChart is the operator chart's name in the repository.
const benchChart = "widget-operator"

// benchCharts are the operator chart's versions 1.0.0 and 1.0.1, plus extra (the CRD of the
// version at the level asked). CRDs are cluster-wide and the fleet is shared: each call names its
// own CRD (Widget<n>), so a benchmark never finds one a former run changed (installing an older
// schema over a newer one is a breaking change that waits for an approval).
func benchCharts(extra ...func(crd string) charttest.ChartFiles) []charttest.ChartFiles {
	crd := fmt.Sprintf("Widget%d", rolloutCRD.Add(1))
	out := []charttest.ChartFiles{benchChartAt("1.0.0", crd, charttest.Base), benchChartAt("1.0.1", crd, charttest.Compatible)}
	for _, e := range extra {
		out = append(out, e(crd))
	}
	return out
}

// rolloutCRD numbers the CRDs of benchCharts.
var rolloutCRD atomic.Int64

// benchChartAt is charttest's operator chart at version with the CRD kind at level instead of
// the Widget CRD.
func benchChartAt(version, kind string, level charttest.Level) charttest.ChartFiles {
	files := charttest.OperatorChart(benchChart, version, level)
	delete(files, "crds/widgets.yaml")
	files["crds/"+strings.ToLower(kind)+".yaml"] = charttest.YAML(charttest.NewCRD(strings.ToLower(kind)+"s", kind, level))
	return files
}

// deployer is a new user with the Operator role: each may POST 10 deployments a minute.
func (r *rolloutBench) deployer() string {
	return r.d.token(fmt.Sprintf("deployer-%d", r.subjects.Add(1)), auth.Operator)
}

// submit POSTs a deployment (the design's JSON) as token and returns its id and the request's
// latency.
func (r *rolloutBench) submit(token, body string) (string, time.Duration) {
	r.b.Helper()
	id, took, err := r.trySubmit(token, body)
	if err != nil {
		r.b.Fatal(err)
	}
	return id, took
}

// trySubmit is submit returning the error (for other goroutines than the benchmark's).
func (r *rolloutBench) trySubmit(token, body string) (string, time.Duration, error) {
	start := time.Now()
	res, err := r.p.do("POST", "/api/v1/deployments", token, []byte(body))
	took := time.Since(start)
	if err != nil {
		return "", took, fmt.Errorf("POST /api/v1/deployments: %w", err)
	}
	if res.status != http.StatusAccepted {
		return "", took, fmt.Errorf("POST /api/v1/deployments %s: status %d: %s", body, res.status, res.body)
	}
	var d api.Deployment
	if err := json.Unmarshal(res.body, &d); err != nil {
		return "", took, fmt.Errorf("POST /api/v1/deployments answered %s: %w", res.body, err)
	}
	return d.ID, took, nil
}

// get is GET /api/v1/deployments/{id}.
func (r *rolloutBench) get(id string) api.Deployment {
	r.b.Helper()
	var d api.Deployment
	if err := json.Unmarshal(r.p.must("GET", "/api/v1/deployments/"+id, r.admin, nil, http.StatusOK).body, &d); err != nil {
		r.b.Fatal(err)
	}
	return d
}

// finished are the statuses a deployment ends in.
var finished = []string{"Completed", "RolledBack", "Failed", "Cancelled"}

// wait polls the deployment every 100 ms until it has ended (3 minutes at most: the slowest
// scenario takes well under one here), fails the benchmark when it ended other than want, and
// returns it.
func (r *rolloutBench) wait(id, want string) api.Deployment {
	r.b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		d := r.get(id)
		if slices.Contains(finished, d.Status) && !(want == "RolledBack" && d.Status == "Completed") {
			if d.Status != want {
				r.b.Fatalf("deployment %s ended %s (%s), want %s\nevents:\n%s", id, d.Status, d.Reason, want, r.events(id))
			}
			return d
		}
		if d.Status == "WaitingApproval" {
			r.b.Fatalf("deployment %s waits for an approval (%s): the benchmark's deployments need none\nevents:\n%s", id, d.Reason, r.events(id))
		}
		if time.Now().After(deadline) {
			r.b.Fatalf("deployment %s still %s (%s) after 3 minutes\nevents:\n%s", id, d.Status, d.Reason, r.events(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// events is the deployment's history, one event a line, for failure messages.
func (r *rolloutBench) events(id string) string {
	var l api.DeploymentEventList
	res, err := r.p.do("GET", "/api/v1/deployments/"+id+"/events?limit=500", r.admin, nil)
	if err != nil || json.Unmarshal(res.body, &l) != nil {
		return fmt.Sprintf("(events unreadable: %v, %s)", err, res.body)
	}
	var b strings.Builder
	for _, e := range l.Items {
		fmt.Fprintf(&b, "  %s %-22s %-4s %s\n", e.Time.Format("15:04:05.000"), e.Type, e.Cluster, e.Message)
	}
	return b.String()
}

// direct is the body of a Direct deployment (health checks on, all clusters at once).
func direct(operator, version string, clusters []string) string {
	return fmt.Sprintf(`{"operator":%q,"version":%q,"clusters":%s,"strategy":"Direct","directConfig":{"skipHealthChecks":false}}`,
		operator, version, jsonList(clusters))
}

func jsonList(s []string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// scrape reads the manager's /metrics into sample name (with labels) -> value.
func (r *rolloutBench) scrape() map[string]float64 {
	r.b.Helper()
	m, err := r.tryScrape()
	if err != nil {
		r.b.Fatal(err)
	}
	return m
}

// tryScrape is scrape returning the error (for other goroutines than the benchmark's).
func (r *rolloutBench) tryScrape() (map[string]float64, error) {
	resp, err := http.Get(r.metrics)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", r.metrics, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.metrics, err)
	}
	return out, nil
}

// kubeRequests is the Kubernetes API requests and calls of one kind (install, rollback) so far.
func (r *rolloutBench) kubeRequests(call string) (requests, calls float64) {
	m := r.scrape()
	label := fmt.Sprintf(`{call=%q}`, call)
	return m["slipway_manager_kube_api_requests_sum"+label], m["slipway_manager_kube_api_requests_count"+label]
}

// reportRequests reports the requests per cluster of the calls of one kind since before.
func (r *rolloutBench) reportRequests(call string, before [2]float64) {
	r.b.Helper()
	req, n := r.kubeRequests(call)
	if n == before[1] {
		r.b.Fatalf("no %s call counted in slipway_manager_kube_api_requests", call)
	}
	r.b.ReportMetric((req-before[0])/(n-before[1]), "kube-requests/"+call)
}

func (r *rolloutBench) requestsNow(call string) [2]float64 {
	req, n := r.kubeRequests(call)
	return [2]float64{req, n}
}

// reportPeakRSS reports the manager's peak resident set (VmHWM) over its life so far.
func (r *rolloutBench) reportPeakRSS() {
	r.b.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(r.p.cmd.Process.Pid), "status"))
	if err != nil {
		r.b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				r.b.Fatal(err)
			}
			r.b.ReportMetric(float64(kb)/1024, "peak-rss-MiB")
			return
		}
	}
	r.b.Fatal("no VmHWM in /proc/<pid>/status")
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// BenchmarkRolloutDirect10: a Direct deployment (health checks on, parallelClusters at its
// default: all) of the operator chart to the 10 clusters, a first install, then a second Direct
// deployment upgrading all 10 to 1.0.1. It reports seconds from POST to Completed of each
// (design: < 15 min; issue target < 30 s), the Kubernetes API requests per cluster install, and
// the manager's peak RSS. On SQLite and PostgreSQL.
func BenchmarkRolloutDirect10(b *testing.B) {
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			r := newRolloutBench(b, engine, benchCharts())
			var install, upgrade time.Duration
			before := r.requestsNow("install")
			for b.Loop() {
				op := r.operators("direct", 1)[0]
				start := time.Now()
				id, _ := r.submit(r.deployer(), direct(op, "1.0.0", r.clusters))
				r.wait(id, "Completed")
				install += time.Since(start)
				start = time.Now()
				id, _ = r.submit(r.deployer(), direct(op, "1.0.1", r.clusters))
				d := r.wait(id, "Completed")
				upgrade += time.Since(start)
				if c := d.Clusters[0]; c.HelmRevision != 2 || c.PreviousVersion != "1.0.0" {
					b.Fatalf("upgrade's cluster %+v, want revision 2 over 1.0.0", c)
				}
			}
			b.ReportMetric(seconds(install)/float64(b.N), "install-s")
			b.ReportMetric(seconds(upgrade)/float64(b.N), "upgrade-s")
			r.reportRequests("install", before)
			r.reportPeakRSS()
		})
	}
}

// BenchmarkRolloutRolling10: a Rolling deployment over the 10 clusters (one after another) with
// validationPeriod PT0S, a first install. It reports seconds from POST to Completed, the requests
// per cluster install and the peak RSS.
func BenchmarkRolloutRolling10(b *testing.B) {
	r := newRolloutBench(b, "sqlite", benchCharts())
	var total time.Duration
	before := r.requestsNow("install")
	for b.Loop() {
		op := r.operators("rolling", 1)[0]
		start := time.Now()
		id, _ := r.submit(r.deployer(), fmt.Sprintf(`{"operator":%q,"version":"1.0.0","clusters":%s,"strategy":"Rolling","rollingConfig":{"validationPeriod":"PT0S"}}`,
			op, jsonList(r.clusters)))
		r.wait(id, "Completed")
		total += time.Since(start)
	}
	b.ReportMetric(seconds(total)/float64(b.N), "seconds")
	r.reportRequests("install", before)
	r.reportPeakRSS()
}

// BenchmarkRolloutSingle: one cluster end to end (a Direct first install with health checks, then
// a Direct upgrade): seconds from POST to Completed (design: < 3 min).
func BenchmarkRolloutSingle(b *testing.B) {
	r := newRolloutBench(b, "sqlite", benchCharts())
	var install, upgrade time.Duration
	before := r.requestsNow("install")
	for b.Loop() {
		op := r.operators("single", 1)[0]
		start := time.Now()
		id, _ := r.submit(r.deployer(), direct(op, "1.0.0", r.clusters[:1]))
		r.wait(id, "Completed")
		install += time.Since(start)
		start = time.Now()
		id, _ = r.submit(r.deployer(), direct(op, "1.0.1", r.clusters[:1]))
		r.wait(id, "Completed")
		upgrade += time.Since(start)
	}
	b.ReportMetric(seconds(install)/float64(b.N), "install-s")
	b.ReportMetric(seconds(upgrade)/float64(b.N), "upgrade-s")
	r.reportRequests("install", before)
	r.reportPeakRSS()
}

// restartingChart is version (with 1.0.1's CRD) with pods that restart every second once running
// (kwok's pod-restart stage): it installs (Ready) and then fails its health checks.
func restartingChart(version string) func(crd string) charttest.ChartFiles {
	return func(crd string) charttest.ChartFiles {
		files := benchChartAt(version, crd, charttest.Compatible)
		const anchor = "  template:\n    metadata:\n      labels:\n        app.kubernetes.io/instance: {{ .Release.Name }}\n"
		d := files["templates/deployment.yaml"]
		if !strings.Contains(d, anchor) {
			panic("charttest's deployment template changed: update restartingChart")
		}
		files["templates/deployment.yaml"] = strings.Replace(d, anchor, anchor+
			"        "+controlplane.RestartLabel+": \"true\"\n"+
			"      annotations:\n        "+controlplane.RestartIntervalAnnotation+": 1s\n", 1)
		return files
	}
}

// BenchmarkRolloutRollback: 1.0.0 then 1.0.1 go to the 10 clusters (Direct, Completed), then the
// upgrade is rolled back by hand (POST /deployments/{id}/rollback, an Admin): seconds from that
// POST to RolledBack (issue target < 20 s) and the manager's own trigger-to-end duration
// (rollback-status). Then an automatic rollback: a Rolling deployment (validationPeriod PT30S)
// of 1.0.2, whose pods restart every second, is caught by its validation's health checks on
// the first cluster and rolled back: seconds from the trigger to RolledBack (rollback-status).
// It reports the requests per cluster rollback and the peak RSS.
func BenchmarkRolloutRollback(b *testing.B) {
	r := newRolloutBench(b, "sqlite", benchCharts(restartingChart("1.0.2")))
	var manual, manualServer, auto time.Duration
	before := r.requestsNow("rollback")
	for b.Loop() {
		op := r.operators("rollback", 1)[0]
		id, _ := r.submit(r.deployer(), direct(op, "1.0.0", r.clusters))
		r.wait(id, "Completed")
		id, _ = r.submit(r.deployer(), direct(op, "1.0.1", r.clusters))
		r.wait(id, "Completed")

		start := time.Now()
		r.p.must("POST", "/api/v1/deployments/"+id+"/rollback", r.admin, []byte(`{"reason":"benchmark"}`), http.StatusAccepted)
		r.wait(id, "RolledBack")
		manual += time.Since(start)
		manualServer += r.rollbackDuration(id)

		id, _ = r.submit(r.deployer(), fmt.Sprintf(`{"operator":%q,"version":"1.0.2","clusters":%s,"strategy":"Rolling","rollingConfig":{"validationPeriod":"PT30S"}}`,
			op, jsonList(r.clusters)))
		r.wait(id, "RolledBack")
		auto += r.rollbackDuration(id)
	}
	b.ReportMetric(seconds(manual)/float64(b.N), "manual-s")
	b.ReportMetric(seconds(manualServer)/float64(b.N), "manual-server-s")
	b.ReportMetric(seconds(auto)/float64(b.N), "auto-s")
	r.reportRequests("rollback", before)
	r.reportPeakRSS()
}

// rollbackDuration is GET /deployments/{id}/rollback-status's durationSeconds of a finished
// rollback.
func (r *rolloutBench) rollbackDuration(id string) time.Duration {
	r.b.Helper()
	var s api.RollbackStatus
	if err := json.Unmarshal(r.p.must("GET", "/api/v1/deployments/"+id+"/rollback-status", r.admin, nil, http.StatusOK).body, &s); err != nil {
		r.b.Fatal(err)
	}
	if s.Status != api.RollbackRolledBack || s.DurationSeconds == nil {
		r.b.Fatalf("rollback-status of %s: %+v, want rolledBack with a duration", id, s)
	}
	r.b.Logf("rollback of %s: %s (%.2fs)", id, s.Reason, *s.DurationSeconds)
	return time.Duration(*s.DurationSeconds * float64(time.Second))
}

// BenchmarkRolloutPost: POST /api/v1/deployments latency, one request at a time, for
// SLIPWAY_BENCH_POST_OPERATORS (default 20) operators × the 10 clusters, each request a Direct
// deployment of one operator to one cluster (one active deployment per (operator, cluster), so
// every request is accepted); the deployments run while later requests arrive. The design's
// limit of 10 POSTs a minute per user stays on: every 10 requests come from a new user. It
// reports p50/p99 (issue target p99 < 500 ms), then waits for every deployment to complete.
func BenchmarkRolloutPost(b *testing.B) {
	n := testenv.Sizes(b, "SLIPWAY_BENCH_POST_OPERATORS", 20)[0]
	r := newRolloutBench(b, "sqlite", benchCharts())
	var lat []time.Duration
	var ids []string
	for b.Loop() {
		ops := r.operators("post", n)
		var token string
		for i := range n * len(r.clusters) {
			if i%10 == 0 {
				token = r.deployer()
			}
			id, took := r.submit(token, direct(ops[i/len(r.clusters)], "1.0.0", r.clusters[i%len(r.clusters):][:1]))
			lat = append(lat, took)
			ids = append(ids, id)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	start := time.Now()
	for _, id := range ids {
		r.wait(id, "Completed")
	}
	b.Logf("%d deployments completed %s after the last POST", len(ids), time.Since(start).Round(time.Second))
	r.reportPeakRSS()
}

// BenchmarkRollout20Concurrent: 20 operators, each deployed Direct to the 10 clusters, all 20
// POSTed at once (each by its own user): 200 installs. It reports seconds from the first POST
// until all are Completed, the most deployments active at once (slipway_manager_deployments_active
// sampled every 200 ms, and the largest overlap of the deployments' start-to-finish spans; the
// default --max-concurrent-deployments is 20), the requests per cluster install and the peak RSS.
func BenchmarkRollout20Concurrent(b *testing.B) {
	const deployments = 20
	r := newRolloutBench(b, "sqlite", benchCharts())
	var total time.Duration
	var maxGauge float64
	var maxOverlap int
	before := r.requestsNow("install")
	for b.Loop() {
		ops := r.operators("conc", deployments)
		tokens := make([]string, deployments)
		for i := range tokens {
			tokens[i] = r.deployer()
		}
		done := make(chan struct{})
		var sampler sync.WaitGroup
		var scrapeErr error
		sampler.Go(func() {
			for {
				m, err := r.tryScrape()
				if err != nil {
					scrapeErr = err
					return
				}
				maxGauge = max(maxGauge, m["slipway_manager_deployments_active"])
				select {
				case <-done:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
		ids := make([]string, deployments)
		errs := make([]error, deployments)
		start := time.Now()
		var posts sync.WaitGroup
		for i := range deployments {
			posts.Go(func() { ids[i], _, errs[i] = r.trySubmit(tokens[i], direct(ops[i], "1.0.0", r.clusters)) })
		}
		posts.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		var ds []api.Deployment
		for _, id := range ids {
			ds = append(ds, r.wait(id, "Completed"))
		}
		total += time.Since(start)
		close(done)
		sampler.Wait()
		if scrapeErr != nil {
			b.Fatal(scrapeErr)
		}
		maxOverlap = max(maxOverlap, overlap(ds))
	}
	b.ReportMetric(seconds(total)/float64(b.N), "seconds")
	b.ReportMetric(maxGauge, "max-active")
	b.ReportMetric(float64(maxOverlap), "max-overlap")
	if maxGauge > 20 || maxOverlap > 20 {
		b.Errorf("deployments active at once: gauge %v, overlap %d; the limit is 20", maxGauge, maxOverlap)
	}
	r.reportRequests("install", before)
	r.reportPeakRSS()
}

// overlap is the most deployments whose [startedAt, finishedAt] spans share an instant.
func overlap(ds []api.Deployment) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, d := range ds {
		if d.StartedAt != nil && d.FinishedAt != nil {
			edges = append(edges, edge{*d.StartedAt, 1}, edge{*d.FinishedAt, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	most, n := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}
