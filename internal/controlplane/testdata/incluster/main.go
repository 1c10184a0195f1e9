// Command incluster is a test image's program for the real node: it reads its ServiceAccount
// (GET of serviceaccounts/default in its namespace) with the pod's token, trusting the mounted CA,
// at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT, and writes the user the API server took it
// for to its termination message (from the refusal: the ServiceAccount has no role), or the error,
// and exits 1.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	user, err := whoami()
	msg := user
	if err != nil {
		msg = "error: " + err.Error()
	}
	_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
	fmt.Println(msg)
	if err != nil {
		os.Exit(1)
	}
}

func whoami() (string, error) {
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", fmt.Errorf("no certificate in %sca.crt", sa)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	ns, err := os.ReadFile(sa + "namespace")
	if err != nil {
		return "", err
	}
	url := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")) +
		"/api/v1/namespaces/" + string(ns) + "/serviceaccounts/default"
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var status struct{ Message string }
	_ = json.Unmarshal(body, &status)
	// `serviceaccounts "default" is forbidden: User "system:serviceaccount:NS:default" cannot get ...`
	_, rest, ok := strings.Cut(status.Message, `User "`)
	user, _, ok2 := strings.Cut(rest, `"`)
	if resp.StatusCode != http.StatusForbidden || !ok || !ok2 {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	return user, nil
}
