//go:build e2e

package main_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// gate is a registry proxy that holds the first tag-list request until released: the reconcile
// that sent it is in flight, at a boundary the test controls.
type gate struct {
	arrived  chan struct{} // closed when the held request came
	release  chan struct{} // closed by the test to let it through
	canceled chan struct{} // closed when the client gave up on it while held
	answered chan int      // the status it was answered with, once forwarded
	once     sync.Once
}

func startGate(t *testing.T, upstream string) (*gate, string) {
	t.Helper()
	g := &gate{arrived: make(chan struct{}), release: make(chan struct{}), canceled: make(chan struct{}), answered: make(chan int, 1)}
	target, err := url.Parse("http://" + upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held := false
		if registrytest.IsTagsList(r) {
			g.once.Do(func() { held = true })
		}
		if !held {
			proxy.ServeHTTP(w, r)
			return
		}
		close(g.arrived)
		select {
		case <-g.release:
		case <-r.Context().Done():
			close(g.canceled)
			return
		}
		sw := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		proxy.ServeHTTP(sw, r)
		g.answered <- sw.status
	}))
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
		srv.Close()
	})
	return g, strings.TrimPrefix(srv.URL, "http://")
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

// TestOperator_SIGTERMLetsTheRunningReconcileFinish runs the operator binary with its default
// graceful-shutdown timeout (30 s). A WerfBundle's first reconcile is held in its registry
// request (a real registry behind a proxy that holds the tag list); the operator gets SIGTERM and
// has begun to shut down (its controller says it waits for its workers); then the registry
// answers. The reconcile finishes with its context alive: its request is not canceled, its writes
// (the Job and the status naming it) are on the API server, and the process exits with status 0.
func TestOperator_SIGTERMLetsTheRunningReconcileFinish(t *testing.T) {
	operatorproc.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := env.Client
	kubeconfig, err := env.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"), "werfbundle")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.StartDistribution(t)
	registrytest.PushBundle(t, reg.Host, "demo/app", "1.0.0")
	g, proxyHost := startGate(t, reg.Host)

	const ns = "sigterm"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: ns}},
		&werfv1.WerfBundle{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
			Spec: werfv1.WerfBundleSpec{
				Registry: werfv1.RegistrySpec{URL: proxyHost + "/demo/app", Insecure: true},
				Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
			},
		},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	p := operatorproc.Start(t, operatorproc.Binary(t), operatorproc.Options{
		Name:       "operator",
		Kubeconfig: kubeconfig,
		Args:       []string{"--namespace=" + controlplane.OperatorNamespace, "--controllers=werfbundle"},
	})
	select {
	case <-g.arrived:
	case <-p.Exited():
		t.Fatalf("the operator exited before polling the registry: %v", p.Err())
	case <-ctx.Done():
		t.Fatal("the bundle's reconcile never asked the registry for its tags")
	}

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The manager stops its controllers: the werfbundle controller's queue is shut down and it
	// waits for its workers, the held reconcile among them.
	const stopping = "Shutdown signal received, waiting for all workers to finish"
	for !logHas(t, p.LogPath, stopping, `"controller":"werfbundle"`) {
		select {
		case <-g.canceled:
			t.Fatal("SIGTERM canceled the running reconcile's registry request")
		case <-p.Exited():
			t.Fatalf("the operator exited while its reconcile was held: %v", p.Err())
		case <-ctx.Done():
			t.Fatalf("the operator did not begin to shut down (no %q in its log)", stopping)
		case <-time.After(50 * time.Millisecond):
		}
	}
	close(g.release)

	select {
	case status := <-g.answered:
		if status != http.StatusOK {
			t.Errorf("the held tag list was answered %d", status)
		}
	case <-g.canceled:
		t.Fatal("SIGTERM canceled the running reconcile's registry request")
	case <-ctx.Done():
		t.Fatal("the held request was never answered")
	}
	select {
	case <-p.Exited():
		if err := p.Err(); err != nil {
			t.Errorf("the operator exited with %v after SIGTERM, want status 0", err)
		}
	case <-ctx.Done():
		t.Fatal("the operator did not exit after SIGTERM")
	}

	// The reconcile's writes landed: the Job, and the status naming it.
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{werfbundle.LabelBundleName: "app"}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 || jobs.Items[0].Annotations[werfbundle.AnnotationTag] != "1.0.0" {
		t.Fatalf("%d Jobs for the bundle, want the one deploying 1.0.0", len(jobs.Items))
	}
	got := &werfv1.WerfBundle{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ActiveJob != jobs.Items[0].Name || got.Status.Registry == nil || got.Status.Registry.LatestTag != "1.0.0" {
		t.Errorf("status after the shutdown: activeJob %q, registry %+v; want Job %s and tag 1.0.0",
			got.Status.ActiveJob, got.Status.Registry, jobs.Items[0].Name)
	}
}

// logHas reports whether one line of the log file at path holds every one of parts.
func logHas(t *testing.T, path string, parts ...string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
