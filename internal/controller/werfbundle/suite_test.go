//go:build e2e

package werfbundle_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package shares one full control plane: kwok runs the converge Jobs' pods.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Full, func(e *testenv.Env) { env = e })
}

var (
	identityOnce   sync.Once
	identityCfg    *rest.Config
	identityClient client.Client
	identityErr    error
)

// operatorConfig is a rest.Config for the operator's user holding only the generated roles of the
// WerfBundle controller and the common one (config/rbac), as an install with
// --controllers=werfbundle: a missing RBAC marker fails the tests as it would fail in a cluster.
func operatorConfig(t testing.TB) *rest.Config {
	t.Helper()
	identityOnce.Do(func() {
		path, err := env.InstallOperatorIdentity(context.Background(), filepath.Join(env.LogDir, "operator.kubeconfig"), "werfbundle")
		if err != nil {
			identityErr = err
			return
		}
		if identityCfg, identityErr = clientcmd.BuildConfigFromFlags("", path); identityErr != nil {
			return
		}
		identityCfg.QPS, identityCfg.Burst = 500, 1000
		identityClient, identityErr = client.New(identityCfg, client.Options{Scheme: scheme.New()})
	})
	if identityErr != nil {
		t.Fatal(identityErr)
	}
	return identityCfg
}

// operatorClient is an uncached client as the operator's user, for reconcilers driven by hand.
func operatorClient(t testing.TB) client.Client {
	t.Helper()
	operatorConfig(t)
	return identityClient
}

// fixture is one test's world: a bundle namespace, a target namespace with the ServiceAccount.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	ns       string // the WerfBundle's namespace
	target   string // the target namespace
	opNS     string // the operator's namespace (log store)
	c        client.Client
	reconc   *werfbundle.Reconciler
	logs     *fakeLogs
	outcomes *podOutcomes
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	id := rand.String(5)
	f := &fixture{t: t, ctx: ctx, ns: "wb-" + id, target: "wb-" + id + "-prod", opNS: controlplane.OperatorNamespace, c: env.Client,
		logs: &fakeLogs{}, outcomes: &podOutcomes{}}
	operatorConfig(t) // installs the operator's namespace and roles
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
	// The target namespace accepts the bundles of the test's namespace (tenant isolation).
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.target,
		Annotations: map[string]string{werfv1.AcceptBundlesFromAnnotation: f.ns}}})
	f.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: f.target}})
	return f
}

// logsOf lists the stored Job logs of the bundle.
func (f *fixture) logsOf(b *werfv1.WerfBundle) []corev1.ConfigMap {
	f.t.Helper()
	var list corev1.ConfigMapList
	if err := f.c.List(f.ctx, &list, client.InNamespace(f.opNS),
		client.MatchingLabels{werfbundle.LabelBundleName: b.Name, werfbundle.LabelBundleNamespace: b.Namespace}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

func (f *fixture) create(o client.Object) {
	f.t.Helper()
	if err := f.c.Create(f.ctx, o); err != nil {
		f.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// reconciler builds the Reconciler under test, wired like the operator does but with the pod
// outcomes and logs under the test's control (no werf container runs under kwok).
func (f *fixture) reconciler() *werfbundle.Reconciler {
	if f.reconc == nil {
		f.reconc = &werfbundle.Reconciler{
			OperatorNamespace: f.opNS,
			Logs:              f.logs,
			DecoratePod:       f.outcomes.decorate,
		}
	}
	return f.reconc
}

// start runs a manager with the reconciler as the operator's user (operatorConfig) until the test
// ends (or stop is called).
func (f *fixture) start() (stop func()) {
	f.t.Helper()
	r := f.reconciler()
	ctx, cancel := context.WithCancel(f.ctx)
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: f.opNS, GracefulShutdownTimeout: 10 * time.Second}
	mgr, err := operator.NewManager(ctx, operatorConfig(f.t), scheme.New(), opts, []operator.Controller{{
		Name: "werfbundle",
		Setup: func(ctx context.Context, mgr ctrl.Manager, _ operator.Options) error {
			r.Client, r.APIReader, r.Recorder = mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("werfbundle-test")
			return r.SetupWithManager(ctx, mgr, controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4})
		},
	}})
	if err != nil {
		f.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			f.t.Errorf("manager: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			// A restarted operator starts from scratch.
			prev := f.reconc
			f.reconc = &werfbundle.Reconciler{OperatorNamespace: f.opNS, Logs: f.logs, DecoratePod: f.outcomes.decorate,
				AllowCrossNamespace: prev.AllowCrossNamespace, Log: prev.Log}
		})
	}
	f.t.Cleanup(stop)
	return stop
}

type bundleOption func(*werfv1.WerfBundle)

func (f *fixture) bundle(name, repo string, opts ...bundleOption) *werfv1.WerfBundle {
	b := &werfv1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: repo, Insecure: true, PollInterval: &metav1.Duration{Duration: time.Minute}},
			Converge: werfv1.ConvergeSpec{TargetNamespace: f.target, ServiceAccountName: "werf-converge"},
		},
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

func withConstraint(c string) bundleOption {
	return func(b *werfv1.WerfBundle) { b.Spec.Registry.VersionConstraint = c }
}

func withValuesFrom(refs ...werfv1.ValuesReference) bundleOption {
	return func(b *werfv1.WerfBundle) { b.Spec.Converge.ValuesFrom = refs }
}

func withTarget(ns string) bundleOption {
	return func(b *werfv1.WerfBundle) { b.Spec.Converge.TargetNamespace = ns }
}

func withDrift(maxRetries int32) bundleOption {
	return func(b *werfv1.WerfBundle) {
		b.Spec.Converge.DriftDetection = werfv1.DriftDetection{Enabled: true, Interval: &metav1.Duration{Duration: time.Minute}, MaxRetries: maxRetries}
	}
}

// get re-reads the bundle.
func (f *fixture) get(b *werfv1.WerfBundle) *werfv1.WerfBundle {
	f.t.Helper()
	out := &werfv1.WerfBundle{}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(b), out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// waitFor polls the bundle until cond holds.
func (f *fixture) waitFor(b *werfv1.WerfBundle, what string, cond func(*werfv1.WerfBundle) bool) *werfv1.WerfBundle {
	f.t.Helper()
	return testenv.WaitFor(f.ctx, f.t, f.c, client.ObjectKeyFromObject(b), what, cond)
}

func (f *fixture) waitPhase(b *werfv1.WerfBundle, phase werfv1.Phase, tag string) *werfv1.WerfBundle {
	f.t.Helper()
	return f.waitFor(b, fmt.Sprintf("%s is %s with tag %q", b.Name, phase, tag), func(got *werfv1.WerfBundle) bool {
		return got.Status.Phase == phase && (tag == "" || got.Status.LastAppliedTag == tag)
	})
}

// jobs lists the bundle's Jobs.
func (f *fixture) jobs(b *werfv1.WerfBundle) []batchv1.Job {
	f.t.Helper()
	var list batchv1.JobList
	if err := f.c.List(f.ctx, &list, client.MatchingLabels{werfbundle.LabelBundleName: b.Name, werfbundle.LabelBundleNamespace: b.Namespace}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// kstatus reads the bundle the way kstatus (kubectl wait, Flux, Argo CD) would.
func kstatus(t *testing.T, b *werfv1.WerfBundle) status.Status {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// podOutcomes decides what kwok does with each Job's pod: fail it (with an exit code), keep it
// running for a while, or complete it. It stands in for what werf would do in the container.
type podOutcomes struct {
	mu       sync.Mutex
	failTags map[string]bool
	duration time.Duration
	// checkExit is the exit code of drift-check pods: 0 no drift, 2 drift.
	checkExit atomic.Int32
}

func (p *podOutcomes) failTag(tag string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failTags == nil {
		p.failTags = map[string]bool{}
	}
	p.failTags[tag] = true
}

func (p *podOutcomes) setDuration(d time.Duration) {
	p.mu.Lock()
	p.duration = d
	p.mu.Unlock()
}

func (p *podOutcomes) decorate(kind werfbundle.JobKind, tpl *corev1.PodTemplateSpec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
	if p.duration > 0 {
		tpl.Annotations[controlplane.DurationAnnotation] = p.duration.String()
	}
	tag := tpl.Annotations[werfbundle.AnnotationTag]
	fail, exit := false, int32(1)
	switch kind {
	case werfbundle.KindApply:
		fail = p.failTags[tag]
	case werfbundle.KindCheck:
		if code := p.checkExit.Load(); code != 0 {
			fail, exit = true, code
		}
	}
	if fail {
		tpl.Labels[controlplane.FailLabel] = "true"
		tpl.Annotations[controlplane.ExitCodeAnnotation] = fmt.Sprint(exit)
	}
}

// fakeLogs stands in for the werf container's output, which kwok cannot produce.
type fakeLogs struct{}

func (fakeLogs) Tail(_ context.Context, namespace, pod, container string, _ int64) (string, error) {
	return fmt.Sprintf("werf: release applied\nlast line of %s/%s (%s)\n", namespace, pod, container), nil
}

func condition(b *werfv1.WerfBundle, typ string) *metav1.Condition {
	for i := range b.Status.Conditions {
		if b.Status.Conditions[i].Type == typ {
			return &b.Status.Conditions[i]
		}
	}
	return nil
}

func argsOf(j *batchv1.Job) string { return strings.Join(j.Spec.Template.Spec.Containers[0].Args, " ") }

func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	testenv.Eventually(f.ctx, f.t, what, func() (bool, error) { return cond(), nil })
}

func jobDone(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// startRegistry runs a real registry holding the bundle demo/app at the given tags.
func startRegistry(t *testing.T, tags ...string) *registrytest.Registry {
	t.Helper()
	reg := registrytest.StartDistribution(t)
	for _, tag := range tags {
		registrytest.PushBundle(t, reg.Host, "demo/app", tag)
	}
	return reg
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

func clientKeyIn(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
