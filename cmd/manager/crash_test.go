//go:build e2e

package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// stallingRepo fronts a chart repository: it rewrites the index's archive URLs to itself and,
// when armed, holds the first archive download ("stall") or reports when every version's archive
// has been sent ("after").
type stallingRepo struct {
	URL   string
	inner *charttest.Repository

	mu   sync.Mutex
	mode string        // "stall", "after", or "" (serve normally)
	sent int           // archives sent since arm
	hit  chan struct{} // closed when the download stalls, or the last archive was sent
}

func newStallingRepo(t *testing.T, chart string) *stallingRepo {
	t.Helper()
	var charts []charttest.ChartFiles
	for _, v := range charttest.Versions {
		charts = append(charts, charttest.OperatorChart(chart, v.Version, v.Level, charttest.WithTemplateCRD()))
	}
	r := &stallingRepo{inner: charttest.ServeRepository(t, charts...)}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// arm sets what the next archive downloads do and returns the channel closed when it happens.
func (r *stallingRepo) arm(mode string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode, r.sent, r.hit = mode, 0, make(chan struct{})
	return r.hit
}

func (r *stallingRepo) serve(w http.ResponseWriter, req *http.Request) {
	resp, err := http.Get(r.inner.URL + req.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if req.URL.Path == "/index.yaml" {
		body = []byte(strings.ReplaceAll(string(body), r.inner.URL, r.URL))
	}
	archive := strings.HasSuffix(req.URL.Path, ".tgz")
	r.mu.Lock()
	mode, hit := r.mode, r.hit
	if mode == "stall" && archive {
		r.mode = ""
		r.mu.Unlock()
		close(hit)
		<-req.Context().Done() // until the manager dies
		return
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	w.(http.Flusher).Flush()
	if mode != "after" || !archive {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mode == "after" {
		if r.sent++; r.sent == len(charttest.Versions) {
			r.mode = ""
			close(hit)
		}
	}
}

// A manager killed (SIGKILL) in the middle of POST /api/v1/operators, while it downloads the
// chart or right after the last download, leaves either no trace of the operator or the whole of
// it (every version, every CRD revision); after a restart the same request succeeds.
func TestCrashDuringOperatorRegistration(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			d := newDeployment(t, engine)
			repo := newStallingRepo(t, "crash-operator")
			// Killed while a download stalls, and at several moments after the last download
			// (extracting the CRDs, storing them).
			kills := []struct {
				mode  string
				delay time.Duration
			}{{"stall", 0}, {"after", 0}, {"after", 10 * time.Millisecond}, {"after", 40 * time.Millisecond}, {"after", 150 * time.Millisecond}}
			for i, k := range kills {
				mode := k.mode
				name := fmt.Sprintf("crash-%d", i)
				body, _ := json.Marshal(map[string]any{"name": name, "namespace": "crash",
					"chart": map[string]string{"repository": repo.URL, "name": "crash-operator"}})
				p := d.serve("--insecure-http")
				hit := repo.arm(mode)
				done := make(chan error, 1)
				admin := d.admin()
				go func() {
					_, err := p.do("POST", "/api/v1/operators", admin, body)
					done <- err
				}()
				select {
				case <-hit:
					time.Sleep(k.delay)
				case err := <-done:
					// Both may be ready when this goroutine runs late ("after" answers at once).
					select {
					case <-hit:
						time.Sleep(k.delay)
					default:
						t.Fatalf("%s: the registration ended before the chart download was reached: %v", mode, err)
					}
					done <- err
				case <-time.After(time.Minute):
					t.Fatalf("%s: the chart download was not reached within a minute", mode)
				}
				p.Kill()
				if err := <-done; err == nil && mode == "stall" {
					t.Fatalf("%s: the request got an answer from a killed manager", mode)
				}

				complete := checkOperatorAllOrNothing(t, d.openStore(), name)
				t.Logf("killed %s+%s: operator stored: %v", mode, k.delay, complete)
				if mode == "stall" && complete {
					t.Fatal("an operator was stored before its chart was downloaded")
				}

				p = d.serve("--insecure-http")
				want := http.StatusCreated
				if complete {
					want = http.StatusConflict
				}
				p.must("POST", "/api/v1/operators", d.admin(), body, want)
				var op struct{ Versions []string }
				if err := json.Unmarshal(p.must("GET", "/api/v1/operators/"+name, d.admin(), nil, http.StatusOK).body, &op); err != nil {
					t.Fatal(err)
				}
				if len(op.Versions) != len(charttest.Versions) {
					t.Fatalf("operator %s has versions %v after the retry", name, op.Versions)
				}
				p.Stop()
			}
		})
	}
}

// checkOperatorAllOrNothing fails unless the store holds either nothing of operator name or the
// operator with every chart version and the CRD revisions of each; it reports which.
func checkOperatorAllOrNothing(t *testing.T, st store.Store, name string) bool {
	t.Helper()
	ctx := context.Background()
	op, err := st.OperatorGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		schemas, err := st.CRDSchemaList(ctx, &store.CRDSchemaListParams{Name: charttest.Widget(charttest.Base).Name})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range schemas {
			if o, err := st.OperatorGetByID(ctx, s.OperatorID); err != nil || o == nil {
				t.Fatalf("a CRD revision (%s) of no stored operator: %v", s.Version, err)
			}
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	versions, err := st.OperatorVersionList(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(charttest.Versions) {
		t.Fatalf("operator %s stored with %d of %d versions", name, len(versions), len(charttest.Versions))
	}
	for _, crd := range []string{charttest.Widget(charttest.Base).Name, charttest.Gadget(charttest.Base).Name} {
		schemas, err := st.CRDSchemaList(ctx, &store.CRDSchemaListParams{Name: crd})
		if err != nil {
			t.Fatal(err)
		}
		mine := 0
		for _, s := range schemas {
			if s.OperatorID == op.ID {
				mine++
			}
		}
		if mine == 0 {
			t.Fatalf("operator %s stored without revisions of %s", name, crd)
		}
	}
	return true
}

// slowLink is a TCP proxy in front of a kube-apiserver that delays every chunk the server sends
// and can report when a given number of chunks has passed: a manager can be killed at any point
// of a registration.
type slowLink struct {
	Addr   string
	target string
	delay  time.Duration

	chunks atomic.Int64
	mu     sync.Mutex
	at     int64
	hit    chan struct{}
}

func newSlowLink(t *testing.T, target string, delay time.Duration) *slowLink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowLink{Addr: l.Addr().String(), target: target, delay: delay}
	var conns sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { s.pipe(c) })
		}
	}()
	return s
}

// after resets the chunk count and returns a channel closed once n chunks have been forwarded.
func (s *slowLink) after(n int64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks.Store(0)
	s.at, s.hit = n, make(chan struct{})
	return s.hit
}

func (s *slowLink) pipe(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", s.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			time.Sleep(s.delay)
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
			count := s.chunks.Add(1)
			s.mu.Lock()
			if s.hit != nil && count == s.at {
				close(s.hit)
				s.hit = nil
			}
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// A manager killed (SIGKILL) at several points of POST /api/v1/clusters (connecting, setting up
// its ServiceAccount in the cluster, storing) leaves either no cluster or a complete one; after a
// restart the same request succeeds, whatever the killed registration left in the cluster.
func TestCrashDuringClusterRegistration(t *testing.T) {
	t.Parallel()
	srv := fleet(t, 1).Servers[0]
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			d := newDeployment(t, engine)
			u, err := url.Parse(srv.Config.Host)
			if err != nil {
				t.Fatal(err)
			}
			link := newSlowLink(t, u.Host, 20*time.Millisecond)
			kubeconfig := withServer(t, srv.Kubeconfig, "https://"+link.Addr)

			// A whole registration through the link, to count its chunks.
			p := d.serve("--insecure-http")
			link.after(-1)
			p.must("POST", "/api/v1/clusters", d.admin(), clusterBody(t, "crash-"+engine+"-whole", kubeconfig), http.StatusCreated)
			total := link.chunks.Load()
			if total < 4 {
				t.Fatalf("a registration passed only %d chunks through the link", total)
			}
			p.Kill()

			for i, at := range []int64{2, total / 3, total * 2 / 3, total - 1, total} {
				name := fmt.Sprintf("crash-%s-%d", engine, i)
				p := d.serve("--insecure-http")
				hit := link.after(at)
				done := make(chan error, 1)
				admin, body := d.admin(), clusterBody(t, name, kubeconfig)
				go func() {
					_, err := p.do("POST", "/api/v1/clusters", admin, body)
					done <- err
				}()
				select {
				case <-hit:
					p.Kill()
					t.Logf("chunk %d of %d: the request ended with %v", at, total, <-done)
				case err := <-done:
					// Fewer chunks this time (TLS records coalesce differently): killed after the
					// answer, the cluster must be whole.
					t.Logf("chunk %d of %d: the registration ended first (%v)", at, total, err)
					p.Kill()
				case <-time.After(time.Minute):
					t.Fatalf("chunk %d of %d not reached within a minute", at, total)
				}

				complete := checkClusterAllOrNothing(t, d.openStore(), name)
				t.Logf("killed after chunk %d of %d: cluster stored: %v", at, total, complete)
				p = d.serve("--insecure-http")
				want := http.StatusCreated
				if complete {
					want = http.StatusConflict
				}
				p.must("POST", "/api/v1/clusters", d.admin(), clusterBody(t, name, kubeconfig), want)
				if h, reason := health(t, p, name); h != "Healthy" {
					t.Fatalf("%s after the retry: %s (%s)", name, h, reason)
				}
				p.Kill()
			}
		})
	}
}

// checkClusterAllOrNothing fails unless the store holds no cluster name or a complete one
// (sealed kubeconfig and token, key id, Kubernetes version); it reports which.
func checkClusterAllOrNothing(t *testing.T, st store.Store, name string) bool {
	t.Helper()
	c, err := st.ClusterGetByName(context.Background(), name)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(c.KubeconfigCiphertext) == 0 || len(c.TokenCiphertext) == 0 || c.KeyID == "" || c.KubernetesVersion == "" || c.TokenExpiresAt == nil {
		t.Fatalf("cluster %s stored incomplete: %+v", name, c)
	}
	return true
}
