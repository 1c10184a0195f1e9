//go:build e2e

package devenv_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	if op.Name != devenv.SampleOperator || op.Namespace != devenv.SampleOperatorNamespace || op.Chart.Name != devenv.SampleOperator ||
		!strings.HasPrefix(op.Chart.Repository, "oci://") || !slices.Equal(op.Versions, newestFirst) || len(op.Versions) < 2 {
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
