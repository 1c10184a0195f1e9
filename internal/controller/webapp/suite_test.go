package webapp_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package's controller tests share one light control plane (etcd and kube-apiserver): no
// Deployment controller runs, so the tests write the Deployments' status themselves. The tests
// that need pods to become available start a full control plane of their own (e2e_test.go).
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}

var (
	identityOnce sync.Once
	identityCfg  *rest.Config
)

// operatorConfig is a rest.Config for the operator's user holding only the generated roles of
// the WebApp controller and the common one (config/rbac), as an install with
// --controllers=webapp: a missing RBAC marker fails the tests as it would fail in a cluster.
func operatorConfig(t testing.TB, e *testenv.Env) *rest.Config {
	t.Helper()
	path, err := e.InstallOperatorIdentity(context.Background(), filepath.Join(e.LogDir, "operator.kubeconfig"), "webapp")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// fixture is one test's world: a namespace and a manager running the reconciler on it.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	ns     string
	c      client.Client
	writes *testenv.CountingClient
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, ns: "wa-" + rand.String(6), c: env.Client}
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
	return f
}

func (f *fixture) create(o client.Object) {
	f.t.Helper()
	if err := f.c.Create(f.ctx, o); err != nil {
		f.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// start runs a manager with the reconciler as the operator's user (operatorConfig), its cache limited to the test's namespace, until the
// test ends. Every write the reconciler sends is counted in f.writes.
func (f *fixture) start(resync time.Duration) {
	f.t.Helper()
	identityOnce.Do(func() { identityCfg = operatorConfig(f.t, env) })
	if identityCfg == nil {
		f.t.Fatal("no operator identity: see the first test's failure")
	}
	mgr, err := ctrl.NewManager(identityCfg, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{f.ns: {}},
			DefaultTransform:  cache.TransformStripManagedFields(),
		},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.writes = testenv.CountWrites(mgr.GetClient())
	r := &webapp.Reconciler{
		Client:       f.writes,
		Recorder:     mgr.GetEventRecorder("webapp-test"),
		ResyncPeriod: resync,
	}
	if err := r.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 2}); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			f.t.Errorf("manager: %v", err)
		}
	}()
	var once sync.Once
	f.t.Cleanup(func() { once.Do(func() { cancel(); <-done }) })
}

type appOption func(*webappv1.WebApp)

// app returns a WebApp in the test's namespace: nginx:1.25, 2 replicas, port 8080.
func (f *fixture) app(name string, opts ...appOption) *webappv1.WebApp {
	a := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: webappv1.WebAppSpec{
			Image:    "nginx:1.25",
			Replicas: ptr.To[int32](2),
			Port:     8080,
		},
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

func withEnv(kv ...string) appOption {
	return func(a *webappv1.WebApp) {
		for i := 0; i+1 < len(kv); i += 2 {
			a.Spec.Env = append(a.Spec.Env, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
	}
}

func (f *fixture) get(a *webappv1.WebApp) *webappv1.WebApp {
	f.t.Helper()
	out := &webappv1.WebApp{}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(a), out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// update re-reads the WebApp, changes it and writes it back, retrying on conflicts.
func (f *fixture) update(a *webappv1.WebApp, change func(*webappv1.WebApp)) {
	f.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &webappv1.WebApp{}
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(a), got); err != nil {
			return err
		}
		change(got)
		return f.c.Update(f.ctx, got)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// waitFor polls the WebApp until cond holds and returns it.
func (f *fixture) waitFor(a *webappv1.WebApp, what string, cond func(*webappv1.WebApp) bool) *webappv1.WebApp {
	f.t.Helper()
	return testenv.WaitFor(f.ctx, f.t, f.c, client.ObjectKeyFromObject(a), what, cond, func(last *webappv1.WebApp) string {
		return fmt.Sprintf("phase %s, conditions %+v", last.Status.Phase, last.Status.Conditions)
	})
}

func (f *fixture) waitPhase(a *webappv1.WebApp, p webappv1.Phase) *webappv1.WebApp {
	f.t.Helper()
	return f.waitFor(a, fmt.Sprintf("%s is %s", a.Name, p), func(got *webappv1.WebApp) bool {
		return got.Status.Phase == p && got.Status.ObservedGeneration == got.Generation
	})
}

// deployment waits for the WebApp's Deployment to satisfy cond.
func (f *fixture) deployment(a *webappv1.WebApp, what string, cond func(*appsv1.Deployment) bool) *appsv1.Deployment {
	f.t.Helper()
	return testenv.WaitFor(f.ctx, f.t, f.c, client.ObjectKeyFromObject(a), what, cond)
}

// service waits for the WebApp's Service to satisfy cond.
func (f *fixture) service(a *webappv1.WebApp, what string, cond func(*corev1.Service) bool) *corev1.Service {
	f.t.Helper()
	return testenv.WaitFor(f.ctx, f.t, f.c, client.ObjectKeyFromObject(a), what, cond)
}

// rollout plays the Deployment controller, which the light control plane lacks: it records the
// Deployment's current generation as observed with the given counts and conditions.
func (f *fixture) rollout(a *webappv1.WebApp, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) {
	f.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(a), d); err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           replicas,
			UpdatedReplicas:    updated,
			ReadyReplicas:      available,
			AvailableReplicas:  available,
			Conditions:         conds,
		}
		if replicas > available {
			d.Status.UnavailableReplicas = replicas - available
		}
		return f.c.Status().Update(f.ctx, d)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func deploymentCondition(typ appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string) appsv1.DeploymentCondition {
	now := metav1.Now()
	return appsv1.DeploymentCondition{Type: typ, Status: s, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
}

// available is the condition set of a Deployment whose rollout completed.
func available() []appsv1.DeploymentCondition {
	return []appsv1.DeploymentCondition{
		deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
		deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", "ReplicaSet has successfully progressed."),
	}
}

// kstatus reads the WebApp the way kstatus (kubectl wait, Flux, Argo CD) would.
func kstatus(t *testing.T, a *webappv1.WebApp) status.Status {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func condition(a *webappv1.WebApp, typ string) *metav1.Condition {
	for i := range a.Status.Conditions {
		if a.Status.Conditions[i].Type == typ {
			return &a.Status.Conditions[i]
		}
	}
	return nil
}

// reconciles is controller-runtime's count of finished WebApp reconciles in this process.
func reconciles(t testing.TB) float64 {
	t.Helper()
	return counter(t, "controller_runtime_reconcile_total", "controller", "webapp")
}

// counter sums the counter family name over the series whose label has value.
func counter(t testing.TB, name, label, value string) float64 {
	t.Helper()
	return testenv.MetricSum(t, name, map[string]string{label: value})
}
