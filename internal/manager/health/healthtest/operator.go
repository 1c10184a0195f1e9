// Package healthtest runs a real controller-runtime controller in the test process, for the
// health checks to judge: it reconciles the custom resources of one kind in one namespace, sets
// their Ready condition and observedGeneration (or stops writing status, or fails every
// reconcile, as a broken version would), and serves controller-runtime's own metrics (its
// controller's series, as a process of its own would) behind a Service of the release, reached
// through the API server's Service proxy as an installed operator's would be.
package healthtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Mode is how the controller reconciles.
type Mode int32

const (
	// OK: every reconcile sets Ready (False with reason TenantError for the names set failing)
	// and observedGeneration, and asks to be requeued soon (a steady flow of reconciles).
	OK Mode = iota
	// StopStatus: reconciles succeed (and requeue) without writing status, as a controller that
	// stopped reconciling its resources.
	StopStatus
	// Error: every reconcile returns an error (counted by controller-runtime as result=error).
	Error
	// Panic: every reconcile panics (controller-runtime recovers and counts it).
	Panic
)

// FailReason is the Ready=False reason the controller reports for a resource set failing, as a
// tenant's invalid input would be reported.
const FailReason = "TenantError"

// Options configure an Operator.
type Options struct {
	// Namespace and Release: the release the metrics Service belongs to (labelled
	// app.kubernetes.io/instance=Release); the controller reconciles the resources in Namespace.
	Namespace, Release string
	// GVK is the kind reconciled.
	GVK schema.GroupVersionKind
	// Secure serves the metrics over https behind controller-runtime's authentication filter
	// (a TokenReview of the caller's bearer token), on a port named https-metrics.
	Secure bool
	// NoService: serve the metrics but create no Service for them.
	NoService bool
	// Requeue is the requeue interval in OK mode (default 500 ms).
	Requeue time.Duration
}

// Operator is a running controller. Stop it with Stop (done in t.Cleanup anyway).
type Operator struct {
	opts    Options
	name    string // the controller's, unique in the process
	cl      client.Client
	mode    atomic.Int32
	mu      sync.Mutex
	failing map[string]bool
	addr    string
	stop    context.CancelFunc
	done    chan struct{}
}

var seq atomic.Int32

// Start starts the controller against the cluster of cfg, its metrics server on a non-loopback
// address of this machine (the API server refuses to proxy to loopback ones), and the release's
// metrics Service and its endpoints.
func Start(t testing.TB, cfg *rest.Config, opts Options) *Operator {
	t.Helper()
	if opts.Requeue <= 0 {
		opts.Requeue = 500 * time.Millisecond
	}
	o := &Operator{opts: opts, name: fmt.Sprintf("%s-%d", opts.Release, seq.Add(1)), failing: map[string]bool{}, done: make(chan struct{})}
	mgr, srv := o.manager(t, cfg)
	o.cl = mgr.GetClient()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(opts.GVK)
	// Failed reconciles are retried at most every 500 ms (not controller-runtime's backoff to
	// 1000 s): a steady flow of reconciles whose error rate a check can read.
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 500*time.Millisecond)
	if err := ctrl.NewControllerManagedBy(mgr).Named(o.name).For(u).
		WithOptions(controller.Options{RateLimiter: limiter}).Complete(o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.stop = cancel
	go func() {
		defer close(o.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("healthtest: the controller manager: %v", err)
		}
	}()
	t.Cleanup(o.Stop)
	o.addr = waitBound(t, srv)
	if !opts.NoService {
		o.service(t, cfg)
	}
	return o
}

func (o *Operator) manager(t testing.TB, cfg *rest.Config) (ctrl.Manager, metricsserver.Server) {
	t.Helper()
	// A real operator's client is not held to client-go's default 5 requests a second: with every
	// resource requeued twice a second (reads of unstructured objects go to the API server), that
	// would leave resources unreconciled, which the checks rightly count against it.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	mopts := metricsserver.Options{BindAddress: net.JoinHostPort(HostIP(t).String(), "0"), SecureServing: o.opts.Secure,
		FilterProvider: filterProvider(o.name, o.opts.Secure)}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metricsserver.NewServer(mopts, cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{o.opts.Namespace: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(srv); err != nil {
		t.Fatal(err)
	}
	return mgr, srv
}

// waitBound waits until the metrics server listens and returns its address.
func waitBound(t testing.TB, srv metricsserver.Server) string {
	t.Helper()
	b, ok := srv.(interface{ GetBindAddr() string })
	if !ok {
		t.Fatal("healthtest: the metrics server does not tell its address")
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if a := b.GetBindAddr(); a != "" {
			return a
		}
	}
	t.Fatal("healthtest: the metrics server did not start within 30 s")
	return ""
}

// Stop stops the controller and its metrics server.
func (o *Operator) Stop() {
	o.stop()
	<-o.done
}

// SetMode switches how the controller reconciles from now on.
func (o *Operator) SetMode(m Mode) { o.mode.Store(int32(m)) }

// SetFailing makes the controller report Ready=False (reason FailReason) for the resources
// named, Ready=True for the others.
func (o *Operator) SetFailing(names ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failing = map[string]bool{}
	for _, n := range names {
		o.failing[n] = true
	}
}

// Addr is the metrics server's address (host:port).
func (o *Operator) Addr() string { return o.addr }

// Reconcile implements reconcile.Reconciler.
func (o *Operator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	switch Mode(o.mode.Load()) {
	case StopStatus:
		// Requeued as in OK mode: when the mode changes back (a version restored), every
		// resource is reconciled again soon, as a restarted controller's first list would.
		return reconcile.Result{RequeueAfter: o.opts.Requeue}, nil
	case Error:
		return reconcile.Result{}, errors.New("healthtest: reconcile failed")
	case Panic:
		panic("healthtest: reconcile panicked")
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.opts.GVK)
	if err := o.cl.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	o.mu.Lock()
	fail := o.failing[u.GetName()]
	o.mu.Unlock()
	status, reason, msg := "True", "Reconciled", "reconciled"
	if fail {
		status, reason, msg = "False", FailReason, "the resource's spec is invalid"
	}
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if og == u.GetGeneration() && len(conds) == 1 && conds[0].(map[string]any)["status"] == status {
		return reconcile.Result{RequeueAfter: o.opts.Requeue}, nil
	}
	_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"type": "Ready", "status": status, "reason": reason, "message": msg, "observedGeneration": u.GetGeneration(),
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}, "status", "conditions")
	if err := o.cl.Status().Update(ctx, u); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: o.opts.Requeue}, nil
}

// PortName is the metrics Service's port name: http-metrics, or https-metrics when Secure.
func (o *Operator) PortName() string {
	if o.opts.Secure {
		return "https-metrics"
	}
	return "http-metrics"
}

// service creates the release's metrics Service, without selector, and its endpoints: a pod that
// no scheduler takes, with this machine's address (the Service proxy forwards only to pods'
// addresses), and an EndpointSlice to it.
func (o *Operator) service(t testing.TB, cfg *rest.Config) {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host, portStr, _ := net.SplitHostPort(o.addr)
	var port int32
	_, _ = fmt.Sscan(portStr, &port)
	ns, name := o.opts.Namespace, o.opts.Release+"-metrics"
	labels := map[string]string{"app.kubernetes.io/instance": o.opts.Release}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns},
		Spec:       corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "manager", Image: "example.com/operator:1"}}},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: o.PortName(), Port: 8443, TargetPort: intstr.FromInt32(port)}}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(o.PortName()), Port: ptr.To(port)}},
	}
	ctx := context.Background()
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, PodIPs: []corev1.PodIP{{IP: host}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{svc, slice} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, obj := range []client.Object{slice, svc, pod} {
			_ = c.Delete(context.Background(), obj)
		}
	})
}

// HostIP is a non-loopback IPv4 address of this machine: the API server refuses to proxy to
// endpoints on loopback addresses.
func HostIP(t testing.TB) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Fatal("healthtest: no non-loopback IPv4 address to serve metrics on")
	return nil
}
