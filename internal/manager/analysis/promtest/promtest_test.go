package promtest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// query asks the server for expr with c and returns the raw JSON answer.
func query(t *testing.T, c *http.Client, base, expr string) (int, string) {
	t.Helper()
	resp, err := c.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The server scrapes a real controller-runtime controller's metrics: its reconciles show up as
// controller_runtime_reconcile_total with the target's namespace label; stopping leaves no process.
func TestServerScrapesController(t *testing.T) {
	c := NewController(t, "promtest-scrape", map[string]string{"namespace": "ns-a"})
	c.Reconcile(3, 2)
	s := Start(t, Options{Targets: []Target{c.Target}})
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, body = query(t, s.Client(), s.URL, `controller_runtime_reconcile_total{namespace="ns-a",controller="promtest-scrape",result="error"}`)
		if strings.Contains(body, `"2"]`) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(body, `"2"]`) {
		t.Fatalf("reconcile errors not scraped as 2: %s", body)
	}
	pid := s.Pid()
	s.Stop()
	if !s.Exited() {
		t.Fatal("server still running after Stop")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("process %d still exists after Stop", pid)
	}
}

// With BasicAuth and TLS, Prometheus itself refuses a request without credentials and serves
// one with them over TLS its CA verifies; a client without the CA is refused by TLS.
func TestServerBasicAuthTLS(t *testing.T) {
	s := Start(t, Options{BasicAuth: map[string]string{"alice": "s3cret"}, TLS: true})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("URL %s, want https", s.URL)
	}
	if code, _ := query(t, s.Client(), s.URL, "vector(1)"); code != http.StatusOK {
		t.Fatalf("with credentials: %d", code)
	}
	noAuth := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsTrusting(s.CAPEM)}}
	if code, _ := query(t, noAuth, s.URL, "vector(1)"); code != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d, want 401", code)
	}
	if _, err := http.Get(s.URL + "/-/ready"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v, want a certificate error", err)
	}
}

// The bearer proxy forwards a request with the token and refuses one without.
func TestBearerProxy(t *testing.T) {
	s := Start(t, Options{})
	u, ca := s.BearerProxy(t, "tok")
	tr := &http.Transport{TLSClientConfig: tlsTrusting(ca)}
	with := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("Authorization", "Bearer tok")
		return tr.RoundTrip(r)
	})}
	if code, body := query(t, with, u, "vector(1)"); code != http.StatusOK {
		t.Fatalf("with token: %d %s", code, body)
	}
	if code, _ := query(t, &http.Client{Transport: tr}, u, "vector(1)"); code != http.StatusUnauthorized {
		t.Fatalf("without token: %d, want 401", code)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
