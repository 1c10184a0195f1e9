package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// attackChart is the attacker's chart the Catalyst tests deploy (../testdata/attacks/<name>), at
// charts/app.
func attackChart(t testing.TB, name string) gittest.Files {
	t.Helper()
	files, err := gittest.AddTree(gittest.Files{}, filepath.Join("..", "testdata", "attacks", name), "charts/app")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkRenderFailed asserts that err is a stalled RenderFailed error saying want, and that the
// deploy stored no Helm release and applied no ConfigMap (but the test's own, existing).
func (f *fixture) checkRenderFailed(err error, want string, existing ...string) {
	f.t.Helper()
	if !errors.Is(err, deploy.ErrInvalidChart) || deploy.Reason(err) != catalystv1alpha1.RenderFailedReason || !deploy.Stalled(err) {
		f.t.Errorf("got %v (reason %s, stalled %v), want a stalled RenderFailed", err, deploy.Reason(err), deploy.Stalled(err))
	}
	if err != nil && !strings.Contains(err.Error(), want) {
		f.t.Errorf("message %q does not say %q", err, want)
	}
	var secrets corev1.SecretList
	if n := f.count(&secrets, helmReleaseSecrets); n != 0 {
		f.t.Errorf("%d Helm release Secrets: the render was not stopped before the first write", n)
	}
	var cms corev1.ConfigMapList
	if err := f.c.List(f.ctx, &cms); err != nil {
		f.t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if cm.Namespace == f.ns && cm.Name != "kube-root-ca.crt" && !slices.Contains(existing, cm.Name) {
			f.t.Errorf("ConfigMap %s was applied", cm.Name)
		}
	}
}

// TestRender_OutputOverTheLimitFails: the attacker's chart that floods (about 21 MB of
// ConfigMaps) fails the deploy at the render output limit, which the message names with its
// value, before anything is parsed or applied.
func TestRender_OutputOverTheLimitFails(t *testing.T) {
	f := newFixture(t, func(o *deploy.Options) { o.Render.MaxBytes = 4 << 20 })
	_, err := f.engine.Deploy(f.ctx, f.request(helmType, f.commit(attackChart(t, "flood")), "charts/app"))
	f.checkRenderFailed(err, "more than 4194304 bytes (the render output limit)")
}

// TestRender_OutputWithinTheLimitDeploys: output under the limit deploys whatever characters it
// holds: a 400 KiB page of markup (each < or > is 6 bytes once JSON escapes it for HTML) takes far
// more than twice its size in the renderer's answer unless the answer leaves it as it is.
func TestRender_OutputWithinTheLimitDeploys(t *testing.T) {
	f := newFixture(t, func(o *deploy.Options) { o.Render.MaxBytes = 512 << 10 })
	src := f.commit(gittest.Files{
		"charts/app/Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"),
		"charts/app/templates/page.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: page}
data:
  page.html: {{ repeat 204800 "<>" | quote }}
`),
	})
	f.deploy(f.request(helmType, src, "charts/app"))
	var cm corev1.ConfigMap
	f.get("page", &cm)
	if got := cm.Data["page.html"]; got != strings.Repeat("<>", 204800) {
		t.Errorf("the page holds %d bytes, want the 409600 rendered", len(got))
	}
}

// TestRender_AHugeErrorIsCut: a template that fails with a message of 8 MiB fails the deploy
// with RenderFailed and the message's beginning (where it fails), not with 8 MiB in the
// operator's memory nor with a renderer answer cut short (which would be retried for ever).
func TestRender_AHugeErrorIsCut(t *testing.T) {
	f := newFixture(t, func(o *deploy.Options) { o.Render.MaxBytes = 1 << 20 })
	src := f.commit(gittest.Files{
		"charts/app/Chart.yaml":          []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"),
		"charts/app/templates/fail.yaml": []byte(`{{ fail (print "the database is gone: " (repeat 8388608 "x")) }}`),
	})
	_, err := f.engine.Deploy(f.ctx, f.request(helmType, src, "charts/app"))
	f.checkRenderFailed(err, "app/templates/fail.yaml")
	if err != nil && (!strings.Contains(err.Error(), "the database is gone: xxx") || len(err.Error()) > 8<<10) {
		t.Errorf("a message of %d bytes (%.200s...), want the failure's beginning within 8 KiB", len(err.Error()), err)
	}
}

// lookupGate is a reverse proxy in front of the API server that holds every read of ConfigMap
// "gate" (the renderer's `lookup` in gateChart) until the test lets one through, and counts them.
type lookupGate struct {
	mu               sync.Mutex
	held, seen, peak int
	pass             chan struct{}
	open             chan struct{}
	openOnce         sync.Once
}

func newLookupGate(t *testing.T) (*lookupGate, *rest.Config) {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	g := &lookupGate{pass: make(chan struct{}), open: make(chan struct{})}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport, FlushInterval: -1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps/gate") {
			g.hold(r)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.openAll)
	// The proxy authenticates as the test's client; each request keeps the impersonation
	// headers it came with.
	return g, &rest.Config{Host: srv.URL}
}

func (g *lookupGate) hold(r *http.Request) {
	g.mu.Lock()
	g.held++
	g.seen++
	g.peak = max(g.peak, g.held)
	g.mu.Unlock()
	select {
	case <-g.pass:
	case <-g.open:
	case <-r.Context().Done():
	}
	g.mu.Lock()
	g.held--
	g.mu.Unlock()
}

func (g *lookupGate) counts() (held, seen, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.seen, g.peak
}

func (g *lookupGate) openAll() { g.openOnce.Do(func() { close(g.open) }) }

// waitBound waits until the API server's authorizer lets the deployer of ns read its ConfigMaps:
// RoleBindings take effect a moment after they are created.
func waitBound(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate.UserName = serviceaccount.MakeUsername(deployerNS, ns)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the deployer of "+ns+" bound", func() (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
}

// gateChart looks ConfigMap "gate" up while it renders.
var gateChart = gittest.Files{
	"charts/app/Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"),
	"charts/app/templates/configmap.yaml": []byte(`{{- $gate := lookup "v1" "ConfigMap" .Release.Namespace "gate" }}
apiVersion: v1
kind: ConfigMap
metadata: {name: rendered}
data: {gate: {{ len $gate | quote }}}
`),
}

// TestRender_BeyondTheConcurrencyLimitRendersWait: five environments deploy at once with a
// render concurrency of 2. Each renderer process holds at the gate in its `lookup`: two are
// there, and the Engine counts three waiting without a renderer; when one rendering is let
// through, exactly one waiting starts. Then all five deploy, never more than two at the gate.
func TestRender_BeyondTheConcurrencyLimitRendersWait(t *testing.T) {
	f := newFixture(t)
	gate, cfg := newLookupGate(t)
	engine, err := deploy.New(cfg, deploy.Options{Render: deploy.RenderLimits{Concurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	src := f.commit(gateChart)
	const n = 5
	reqs := make([]deploy.Request, n)
	for i := range reqs {
		ns := fmt.Sprintf("render-%d-%s", i, rand.String(6))
		if err := f.c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		bindDeployer(f.ctx, t, f.c, ns, deployerRole)
		reqs[i] = f.request(helmType, src, "charts/app")
		reqs[i].Namespace, reqs[i].ServiceAccount = ns, deployerOf(ns)
	}
	for _, req := range reqs {
		waitBound(f.ctx, t, req.Namespace)
	}
	errs := make(chan error, n)
	for _, req := range reqs {
		go func() {
			_, err := engine.Deploy(f.ctx, req)
			errs <- err
		}()
	}
	ended := 0
	// waitFor waits until the gate holds held lookups and the Engine counts running and waiting
	// renderings, while no more than done deploys ended (each other waits at the gate or for a
	// place).
	waitFor := func(held, running, waiting, done int) {
		t.Helper()
		testenv.Eventually(f.ctx, t, fmt.Sprintf("%d renderers at the gate, %d running, %d waiting", held, running, waiting), func() (bool, error) {
			for len(errs) > 0 {
				if err := <-errs; err != nil {
					t.Fatalf("Deploy: %v", err)
				}
				if ended++; ended > done {
					t.Fatalf("%d deploys ended, want %d: a rendering did not wait at the gate", ended, done)
				}
			}
			h, seen, _ := gate.counts()
			s := engine.RenderStats()
			return h == held && s.Running == running && s.Waiting == waiting,
				fmt.Errorf("%d at the gate (%d came), %d running, %d waiting, %d deploys ended", h, seen, s.Running, s.Waiting, ended)
		})
	}
	waitFor(2, 2, 3, 0)
	if _, seen, _ := gate.counts(); seen != 2 {
		t.Errorf("%d renderers reached the gate, want the 2 the limit lets run", seen)
	}
	gate.pass <- struct{}{}
	waitFor(2, 2, 2, 1)
	if _, seen, _ := gate.counts(); seen != 3 {
		t.Errorf("%d renderers reached the gate after one was let through, want 3", seen)
	}
	gate.openAll()
	for ; ended < n; ended++ {
		if err := <-errs; err != nil {
			t.Errorf("Deploy: %v", err)
		}
	}
	if _, seen, peak := gate.counts(); seen != n || peak != 2 {
		t.Errorf("%d renderers reached the gate, at most %d at once; want %d and 2", seen, peak, n)
	}
	if s := engine.RenderStats(); s != (deploy.RenderStats{}) {
		t.Errorf("after the deploys: %+v, want nothing running or waiting", s)
	}
}
