//go:build e2e

package devenv_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/devenv"
)

// managerAccess is what make dev wrote for the manager's users: the URL, the Admin token and the
// manager's certificate.
type managerAccess struct {
	url, token string
	client     *http.Client
}

// readManagerAccess reads manager.url and manager.token from the state directory and returns a
// client that verifies the manager's certificate (the written CA file) instead of skipping it.
func readManagerAccess(t *testing.T, state string) managerAccess {
	t.Helper()
	url := strings.TrimSpace(readStateFile(t, state, devenv.ManagerURLFile))
	token := strings.TrimSpace(readStateFile(t, state, devenv.ManagerTokenFile))
	info, err := os.Stat(filepath.Join(state, devenv.ManagerTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", devenv.ManagerTokenFile, info.Mode().Perm())
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(readStateFile(t, state, devenv.ManagerCAFile))) {
		t.Fatalf("%s holds no certificate", devenv.ManagerCAFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	return managerAccess{url: url, token: token, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// get calls path with token (none when empty) and returns the status and body.
func (m managerAccess) get(t *testing.T, path, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, m.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// post sends body (JSON) to path without a token and returns the status and body.
func (m managerAccess) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	resp, err := m.client.Post(m.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// checkManager is the promise for make dev: with the written URL and token, over TLS,
// the manager lists the control plane as cluster dev, environment Dev, Healthy, and the operator
// slipway with every published version, newest first.
func checkManager(t *testing.T, state string) managerAccess {
	t.Helper()
	m := readManagerAccess(t, state)
	if !strings.HasPrefix(m.url, "https://") {
		t.Errorf("%s = %q, want an https URL", devenv.ManagerURLFile, m.url)
	}
	code, body := m.get(t, "/api/v1/clusters", m.token)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/clusters = %d: %s", code, body)
	}
	var clusters struct {
		Items []struct{ Name, Environment, Health, KubernetesVersion string }
	}
	if err := json.Unmarshal(body, &clusters); err != nil {
		t.Fatalf("GET /api/v1/clusters: %v: %s", err, body)
	}
	if len(clusters.Items) != 1 {
		t.Fatalf("GET /api/v1/clusters lists %d clusters, want the one dev cluster: %s", len(clusters.Items), body)
	}
	if c := clusters.Items[0]; c.Name != devenv.DevCluster || c.Environment != "Dev" || c.Health != "Healthy" || c.KubernetesVersion == "" {
		t.Errorf("cluster %+v, want %s, Dev, Healthy, with its Kubernetes version", c, devenv.DevCluster)
	}
	if strings.Contains(string(body), "client-certificate-data") || strings.Contains(string(body), "BEGIN") {
		t.Errorf("the cluster list carries part of the kubeconfig: %s", body)
	}

	code, body = m.get(t, "/api/v1/operators", m.token)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/operators = %d: %s", code, body)
	}
	var operators struct {
		Items []struct {
			Name, Namespace string
			Chart           struct{ Repository, Name string }
			Versions        []string
		}
	}
	if err := json.Unmarshal(body, &operators); err != nil {
		t.Fatalf("GET /api/v1/operators: %v: %s", err, body)
	}
	if len(operators.Items) != 1 {
		t.Fatalf("GET /api/v1/operators lists %d operators, want the one sample: %s", len(operators.Items), body)
	}
	op := operators.Items[0]
	newestFirst := slices.Clone(devenv.SampleOperatorVersions)
	slices.Reverse(newestFirst)
	// The version published after start may have been found already (checkLaterVersion).
	later := append([]string{devenv.SampleLaterVersion}, newestFirst...)
	if op.Name != devenv.SampleOperator || op.Namespace != devenv.SampleOperatorNamespace || op.Chart.Name != devenv.SampleOperator ||
		!strings.HasPrefix(op.Chart.Repository, "oci://") || !(slices.Equal(op.Versions, newestFirst) || slices.Equal(op.Versions, later)) || len(op.Versions) < 2 {
		t.Errorf("operator %+v, want %s in %s from the OCI chart %s with versions %v", op, devenv.SampleOperator,
			devenv.SampleOperatorNamespace, devenv.SampleOperator, newestFirst)
	}
	if code, body := m.get(t, "/api/v1/clusters", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/clusters without the token = %d, want 401: %s", code, body)
	}
	return m
}

// printsCurl checks that out prints the ready-to-paste command for the state directory;
// checkManager makes the same request with the same files.
func printsCurl(t *testing.T, out, state string) {
	t.Helper()
	want := `curl -k -H "Authorization: Bearer $(cat ` + filepath.Join(state, devenv.ManagerTokenFile) + `)" "$(cat ` +
		filepath.Join(state, devenv.ManagerURLFile) + `)/api/v1/clusters"`
	if !strings.Contains(out, want) {
		t.Errorf("the output does not print %s:\n%s", want, out)
	}
}

func readStateFile(t *testing.T, state, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// freeAddrs returns n distinct free addresses on 127.0.0.1, held until all are chosen.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// deploymentView is what the test reads of a deployment.
type deploymentView struct {
	ID, Operator, Version, Strategy, Status, Reason string
	Clusters                                        []struct {
		Name, Status, Namespace, Release, Message, PreviousVersion string
		HelmRevision, PreviousRevision                             int
	}
}

// healthView is what the test reads of GET /api/v1/operators/{name}/health.
type healthView struct {
	OperatorName, OverallHealth string
	Clusters                    []struct {
		ClusterName, Health string
		// The design's one-value fields.
		ControllerPods                   int
		WebhookStatus, CRDReconciliation string
		// Each part's details.
		Pods struct {
			Health                  string
			Total, Ready, OverLimit int
			CrashLooping            int
			Resources               string
			Messages                []string
		}
		Webhooks struct {
			Health         string
			Total, Healthy int
			Messages       []string
		}
		CRDs struct {
			Health                                 string
			CRDs, Resources, Ready, Failing, Stale int
			Messages                               []string
		}
	}
}

// checkSampleDeployment is the promise for make dev's sample deployment: the one
// deployment make dev submitted (Direct, health checks on, the sample version, to cluster dev) is
// Completed, its cluster healthy at revision 2 (make dev installed revision 1), and the operator's health Healthy with each part
// checked: the release's pod (the operator from its image, on the real node) listed, Running and
// Ready, the release's three webhooks answering through their Service, and the samples' custom
// resources reconciled by that operator. Resource usage is the one aspect not checked
// (no metrics.k8s.io in the dev cluster), and says so. The output printed the deployment's id and
// a curl line for its events, and the status view (the log of devenv serve) shows it Completed
// and the health Healthy. It returns the deployment's id.
func checkSampleDeployment(t *testing.T, m managerAccess, out, state string) string {
	t.Helper()
	code, body := m.get(t, "/api/v1/deployments", m.token)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/deployments = %d: %s", code, body)
	}
	var list struct{ Items []deploymentView }
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("GET /api/v1/deployments: %v: %s", err, body)
	}
	if len(list.Items) != 1 {
		t.Fatalf("GET /api/v1/deployments lists %d deployments, want the sample: %s", len(list.Items), body)
	}
	id := list.Items[0].ID
	if !strings.Contains(out, "deployment: "+id) {
		t.Errorf("the output does not print the deployment's id %s:\n%s", id, out)
	}
	events := `"$(cat ` + filepath.Join(state, devenv.ManagerURLFile) + `)/api/v1/deployments/` + id + `/events"`
	if !strings.Contains(out, events) {
		t.Errorf("the output does not print a curl line for %s:\n%s", events, out)
	}

	var d deploymentView
	deadline := time.Now().Add(4 * time.Minute)
	for {
		code, body := m.get(t, "/api/v1/deployments/"+id, m.token)
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/deployments/%s = %d: %s", id, code, body)
		}
		if err := json.Unmarshal(body, &d); err != nil {
			t.Fatal(err)
		}
		if d.Status == "Completed" {
			break
		}
		if d.Status == "Failed" || d.Status == "RolledBack" || d.Status == "Cancelled" || time.Now().After(deadline) {
			_, ev := m.get(t, "/api/v1/deployments/"+id+"/events", m.token)
			t.Fatalf("the sample deployment is %s (%s), want Completed: %s\nevents: %s\n--- end of manager.log:\n%s", d.Status, d.Reason, body, ev,
				lastLines(filepath.Join(state, "logs", "manager.log"), 30))
		}
		time.Sleep(time.Second)
	}
	if d.Operator != devenv.SampleOperator || d.Version != devenv.SampleDeploymentVersion || d.Strategy != "Direct" || len(d.Clusters) != 1 {
		t.Fatalf("deployment %+v, want Direct of %s %s to one cluster", d, devenv.SampleOperator, devenv.SampleDeploymentVersion)
	}
	// make dev installed revision 1 at the older version; the deployment upgraded it.
	if c := d.Clusters[0]; c.Name != devenv.DevCluster || c.Status != "healthy" || c.HelmRevision != 2 || c.PreviousRevision != 1 ||
		c.PreviousVersion != devenv.SampleInstalledVersion || c.Namespace != devenv.SampleOperatorNamespace ||
		c.Release != devenv.SampleOperator || strings.Contains(c.Message, "skipped") {
		t.Errorf("cluster %+v, want %s healthy at revision 2 of %s/%s (from revision 1, %s), health checked", c, devenv.DevCluster,
			devenv.SampleOperatorNamespace, devenv.SampleOperator, devenv.SampleInstalledVersion)
	}
	code, body = m.get(t, "/api/v1/deployments/"+id+"/events", m.token)
	if code != http.StatusOK || !strings.Contains(string(body), "cluster.installed") || !strings.Contains(string(body), "stage.passed") {
		t.Errorf("GET /api/v1/deployments/%s/events = %d, want the install and the passed stage: %s", id, code, body)
	}

	h, body := healthyOperator(t, m)
	if h.OverallHealth != "Healthy" || len(h.Clusters) != 1 || h.Clusters[0].ClusterName != devenv.DevCluster {
		t.Fatalf("operator health %s, want Healthy on cluster %s", body, devenv.DevCluster)
	}
	c := h.Clusters[0]
	if c.ControllerPods != 1 || c.WebhookStatus != "Available" || c.CRDReconciliation != "Active" {
		t.Errorf("controllerPods %d, webhookStatus %s, crdReconciliation %s: want 1, Available, Active",
			c.ControllerPods, c.WebhookStatus, c.CRDReconciliation)
	}
	pods, hooks, crds := c.Pods, c.Webhooks, c.CRDs
	// The pods are listed and judged; only their resource usage is not (no metrics API).
	if pods.Health != "Healthy" || pods.Total != 1 || pods.Ready != 1 || pods.CrashLooping != 0 || pods.Resources != "NotChecked" ||
		len(pods.Messages) != 1 || !strings.HasPrefix(pods.Messages[0], "not checked: resource usage: metrics unavailable") {
		t.Errorf("controller pods %+v, want the one pod Running and Ready, only resource usage not checked", pods)
	}
	// The release's three WebApp webhooks, served by the operator's pod through their Service.
	if hooks.Health != "Healthy" || hooks.Total != 3 || hooks.Healthy != 3 || len(hooks.Messages) != 0 {
		t.Errorf("webhooks %+v, want the release's 3 Healthy", hooks)
	}
	// The samples' custom resources (WebApp, WerfBundle, Project, Environment) are reconciled.
	if crds.Health != "Healthy" || crds.CRDs != 4 || crds.Resources < 4 || crds.Ready != crds.Resources || crds.Failing != 0 ||
		crds.Stale != 0 || slices.ContainsFunc(crds.Messages, func(s string) bool { return strings.HasPrefix(s, "not checked") }) {
		t.Errorf("CRD reconciliation %+v, want the 4 CRDs' resources all Ready", crds)
	}

	// The status view (devenv serve's output) followed it to Completed and Healthy, and lists the
	// manager's cluster (the local control plane, Dev, Healthy) and operator (the sample with its
	// versions, newest first).
	newestFirst := slices.Clone(devenv.SampleOperatorVersions)
	slices.Reverse(newestFirst)
	clusterRow := regexp.MustCompile(`(?m)^manager/Cluster +` + regexp.QuoteMeta(devenv.DevCluster) +
		` +Healthy +Dev, Kubernetes v1\.[0-9]+\.[0-9]+[^ ]*$`)
	operatorRow := operatorRowOf(newestFirst)
	deadline = time.Now().Add(30 * time.Second)
	for {
		log := readStateFile(t, state, "devenv.log")
		completed := regexp.MustCompile(`manager/Deployment +` + id + ` +Completed`).MatchString(log)
		healthy := regexp.MustCompile(`manager/OperatorHealth +` + devenv.DevCluster + ` +` + devenv.SampleOperator + ` +Healthy +pods Healthy 1/1`).MatchString(log)
		cluster, operator := clusterRow.MatchString(log), operatorRow.MatchString(log)
		if completed && healthy && cluster && operator {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status view does not show the deployment Completed (%v), the health Healthy (%v), the cluster %s "+
				"Dev and Healthy (%v), the operator %s with versions %v (%v):\n%s", completed, healthy, devenv.DevCluster, cluster,
				devenv.SampleOperator, newestFirst, operator, lastLines(filepath.Join(state, "devenv.log"), 40))
		}
		time.Sleep(time.Second)
	}
	return id
}

// operatorRowOf matches the status view's row of the sample operator with versions (newest first).
func operatorRowOf(versions []string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^manager/Operator +` + regexp.QuoteMeta(devenv.SampleOperatorNamespace) + ` +` +
		regexp.QuoteMeta(devenv.SampleOperator) + fmt.Sprintf(` +%d versions +`, len(versions)) +
		regexp.QuoteMeta(strings.Join(versions, ", ")) + `$`)
}

// checkLaterVersion is the promise for a chart version published after start: make dev
// publishes SampleLaterVersion of the sample chart (after --later-version-delay), the manager's
// refresh loop finds it without the operator being registered again, and the status view shows
// the operator's row gain it after showing it without (and the chart's row Published). The
// output said when it would be published.
func checkLaterVersion(t *testing.T, m managerAccess, out, state string) {
	t.Helper()
	if !strings.Contains(out, "later:      "+devenv.SampleOperator+" "+devenv.SampleLaterVersion+" is published to the registry at ") {
		t.Errorf("the output does not say when %s is published:\n%s", devenv.SampleLaterVersion, out)
	}
	before := slices.Clone(devenv.SampleOperatorVersions)
	slices.Reverse(before)
	after := append([]string{devenv.SampleLaterVersion}, before...)
	var op struct {
		Versions []string
		Refresh  *struct{ Error string }
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, body := m.get(t, "/api/v1/operators/"+devenv.SampleOperator, m.token)
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/operators/%s = %d: %s", devenv.SampleOperator, code, body)
		}
		if err := json.Unmarshal(body, &op); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(op.Versions, after) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager does not list %s: %s\n--- end of manager.log:\n%s", devenv.SampleLaterVersion, body,
				lastLines(filepath.Join(state, "logs", "manager.log"), 30))
		}
		time.Sleep(time.Second)
	}
	if op.Refresh == nil || op.Refresh.Error != "" {
		t.Errorf("the operator's last refresh: %+v", op.Refresh)
	}
	published := regexp.MustCompile(`(?m)^registry/Chart +` + regexp.QuoteMeta(devenv.SampleOperator+":"+devenv.SampleLaterVersion) + ` +Published +at `)
	deadline = time.Now().Add(30 * time.Second)
	for {
		log := readStateFile(t, state, "devenv.log")
		without, with := operatorRowOf(before).FindStringIndex(log), operatorRowOf(after).FindStringIndex(log)
		if without != nil && with != nil && with[0] > without[0] && published.MatchString(log) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status view does not show the operator's row without %s, then with it (%v, %v), and the chart Published (%v):\n%s",
				devenv.SampleLaterVersion, without, with, published.MatchString(log), lastLines(filepath.Join(state, "devenv.log"), 40))
		}
		time.Sleep(time.Second)
	}
}

// healthyOperator reads the sample operator's health until a check stored it Healthy (the health
// loop keeps checking: one slow answer on a loaded machine may have stored a failure just before),
// for up to a minute, and returns the last one read.
func healthyOperator(t *testing.T, m managerAccess) (healthView, []byte) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := m.get(t, "/api/v1/operators/"+devenv.SampleOperator+"/health", m.token)
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/operators/%s/health = %d: %s", devenv.SampleOperator, code, body)
		}
		var h healthView
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatal(err)
		}
		if h.OverallHealth == "Healthy" || time.Now().After(deadline) {
			return h, body
		}
		time.Sleep(time.Second)
	}
}
