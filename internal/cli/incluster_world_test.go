//go:build e2e

package cli_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	catalystv1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/cli"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/joblog/joblogtest"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// world is the cluster the in-cluster verbs are tested on: a full control plane (kwok runs the
// pods, kube-controller-manager the Jobs and Deployments) with the WerfBundle and WebApp
// controllers running in-process against a real registry, a kwok node serving the werf pods'
// logs through pods/log, and Catalyst Environments whose status is written as its controller
// writes it (the Catalyst controller needs git, a registry and builds, out of this test's scope).
type world struct {
	t        *testing.T
	ctx      context.Context
	env      *testenv.Env
	c        client.Client
	reg      *registrytest.Registry
	node     *joblogtest.LogNode
	outcomes *podOutcomes
	// now is the clock of the tables: every object is between 3h20m and 3h30m old by it, so AGE
	// reads 3h on a terminal.
	now time.Time
}

const (
	nsA       = "team-a"   // bundles app and paused, WebApp web; the werf Jobs run here
	nsB       = "team-b"   // bundle broken, WebApp api
	nsShop    = "shop-web" // the previews
	nsEmpty   = "empty"    // nothing
	opNS      = "slipway-system"
	previewDN = "preview.example.dev"
)

func startWorld(t *testing.T) *world {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	t.Cleanup(cancel)
	w := &world{t: t, ctx: ctx, env: testenv.New(t, testenv.Full), outcomes: &podOutcomes{}, now: time.Now().Add(3*time.Hour + 30*time.Minute)}
	w.c = w.env.Client
	for _, ns := range []string{nsA, nsB, nsShop, nsEmpty, opNS} {
		w.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	w.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: nsA}})
	w.reg = registrytest.StartDistribution(t)
	registrytest.PushBundle(t, w.reg.Host, "demo/app", "1.0.0")
	w.node = joblogtest.StartLogNode(t, w.env, nsA)
	w.node.WriteLog(t, nsA, "werf: release applied\n")
	w.startOperator()
	w.createBundles()
	w.createWebApps()
	w.createPreviews()
	w.waitBundle(nsA, "app", "app deployed 1.0.0", func(b *werfv1.WerfBundle) bool {
		return b.Status.Phase == werfv1.PhaseSynced && b.Status.LastAppliedTag == "1.0.0"
	})
	w.waitBundle(nsA, "paused", "paused suspended", func(b *werfv1.WerfBundle) bool {
		c := conditions.Get(b.Status.Conditions, conditions.Ready)
		return c != nil && c.Reason == "Suspended"
	})
	w.waitBundle(nsB, "broken", "broken failed", func(b *werfv1.WerfBundle) bool { return b.Status.Phase == werfv1.PhaseFailed })
	for _, key := range []client.ObjectKey{{Namespace: nsA, Name: "web"}, {Namespace: nsB, Name: "api"}} {
		testenv.WaitFor(ctx, t, w.c, key, key.String()+" ready", func(a *webappv1.WebApp) bool { return a.Status.Phase == webappv1.PhaseReady })
	}
	return w
}

func (w *world) create(o client.Object) {
	w.t.Helper()
	if err := w.c.Create(w.ctx, o); err != nil {
		w.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// startOperator runs the WerfBundle and WebApp reconcilers in a manager of the operator's, as
// an admin, until the test ends. Every werf pod runs on the log node.
func (w *world) startOperator() {
	t := w.t
	cs, err := kubernetes.NewForConfig(w.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	werfR := &werfbundle.Reconciler{OperatorNamespace: opNS, Logs: werfbundle.PodLogs{REST: cs.CoreV1().RESTClient()},
		DecoratePod: func(kind werfbundle.JobKind, tpl *corev1.PodTemplateSpec) {
			w.outcomes.decorate(tpl)
			w.node.Bind(&tpl.Spec)
		}}
	ctx, cancel := context.WithCancel(w.ctx)
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: opNS, GracefulShutdownTimeout: 10 * time.Second,
		SkipControllerNameValidation: true}
	mgr, err := operator.NewManager(ctx, w.env.Config, scheme.New(), opts, []operator.Controller{
		{Name: "werfbundle", Setup: func(ctx context.Context, mgr ctrl.Manager, _ operator.Options) error {
			werfR.Client, werfR.APIReader, werfR.Recorder = mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("werfbundle")
			return werfR.SetupWithManager(ctx, mgr, controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4})
		}},
		{Name: "webapp", Setup: func(_ context.Context, mgr ctrl.Manager, _ operator.Options) error {
			r := &webapp.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("webapp"), ResyncPeriod: time.Minute}
			return r.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(true)})
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("operator: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func (w *world) bundle(ns, name string, mutate func(*werfv1.WerfBundle)) *werfv1.WerfBundle {
	b := &werfv1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: w.reg.Repository("demo/app"), Insecure: true, PollInterval: &metav1.Duration{Duration: time.Hour}},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
		},
	}
	if mutate != nil {
		mutate(b)
	}
	return b
}

func (w *world) createBundles() {
	// As the operator's shard assigner labels a bundle (--shards > 1): get shows the shard.
	w.create(w.bundle(nsA, "app", func(b *werfv1.WerfBundle) { b.Labels = map[string]string{werfv1.ShardLabel: "slipway-werfbundle-0"} }))
	w.create(w.bundle(nsA, "paused", func(b *werfv1.WerfBundle) { b.Spec.Suspend = true }))
	// team-b has no ServiceAccount werf-converge: the bundle fails at once, a human must act.
	w.create(w.bundle(nsB, "broken", nil))
}

func (w *world) createWebApps() {
	// As the operator's shard assigner labels a WebApp (--shards > 1): get shows the shard.
	w.create(&webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: nsA, Labels: map[string]string{webappv1.ShardLabel: "slipway-webapp-1"}},
		Spec: webappv1.WebAppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)}})
	w.create(&webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: nsB},
		Spec: webappv1.WebAppSpec{Image: "ghcr.io/acme/api:2.1.0", Port: 8080}})
}

const (
	sha123 = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
	sha124 = "b2c3d4e5f60718293a4b5c6d7e8f901234567890"
)

// createPreviews makes three previews and a staging environment, with the status Catalyst's
// controller writes: pr-123 served, pr-124 building its image, pr-125 served (held by the
// controller's finalizer, as every Environment is), staging a deployment environment.
func (w *world) createPreviews() {
	served := func(name string, pr int64, typ catalystv1.EnvironmentType, finalizer bool) {
		url := "https://" + name + "." + previewDN
		w.createEnvironment(name, pr, sha123, typ, finalizer, func(st *catalystv1.EnvironmentStatus) {
			st.Phase, st.URL = catalystv1.PhaseReady, url
			st.DeployedRevision = sha123[:7] + "-5d41402a"
			set := func(typ, reason, msg string) {
				conditions.Set(&st.Conditions, 1, typ, metav1.ConditionTrue, reason, msg)
			}
			set(catalystv1.NamespaceReadyCondition, catalystv1.SucceededReason,
				fmt.Sprintf("Namespace %s is ready with its quota, network policy and 1 copied Secret(s)", st.Namespace))
			set(catalystv1.BuildReadyCondition, catalystv1.ImageFoundReason, fmt.Sprintf("Image %s is in the registry", st.Image))
			set(catalystv1.DeploymentReadyCondition, catalystv1.SucceededReason,
				fmt.Sprintf("Deployed commit %s (revision %s): Deployment web is available", sha123[:7], st.DeployedRevision))
			set(conditions.Ready, catalystv1.SucceededReason, "Serving "+url)
		})
	}
	served("pr-123", 123, "", true)
	served("pr-125", 125, catalystv1.EnvironmentTypeDevelopment, true)
	served("staging", 0, catalystv1.EnvironmentTypeDeployment, true)
	w.createEnvironment("pr-124", 124, sha124, "", false, func(st *catalystv1.EnvironmentStatus) {
		st.Phase = catalystv1.PhaseBuilding
		msg := fmt.Sprintf("Building %s with Job %s/build-pr-124-7f3a9c", st.Image, opNS)
		conditions.Set(&st.Conditions, 1, catalystv1.NamespaceReadyCondition, metav1.ConditionTrue, catalystv1.SucceededReason,
			fmt.Sprintf("Namespace %s is ready with its quota, network policy and 1 copied Secret(s)", st.Namespace))
		conditions.Set(&st.Conditions, 1, catalystv1.BuildReadyCondition, metav1.ConditionFalse, catalystv1.BuildingReason, msg)
		conditions.Set(&st.Conditions, 1, catalystv1.DeploymentReadyCondition, metav1.ConditionUnknown, catalystv1.ProgressingReason, "Waiting for the image")
		conditions.Set(&st.Conditions, 1, conditions.Ready, metav1.ConditionFalse, catalystv1.BuildingReason, msg)
		conditions.Set(&st.Conditions, 1, conditions.Reconciling, metav1.ConditionTrue, catalystv1.BuildingReason, msg)
	})
}

func (w *world) createEnvironment(name string, pr int64, sha string, typ catalystv1.EnvironmentType, finalizer bool, status func(*catalystv1.EnvironmentStatus)) {
	e := &catalystv1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsShop,
			Labels: map[string]string{"catalyst.dev/team": "shop", "catalyst.dev/project": "web", "catalyst.dev/environment": name}},
		Spec: catalystv1.EnvironmentSpec{ProjectRef: catalystv1.ProjectReference{Name: "web", Namespace: "shop"}, Type: typ,
			Source: catalystv1.EnvironmentSource{CommitSHA: sha, Branch: "feature/" + name, PRNumber: pr}},
	}
	if finalizer {
		e.Finalizers = []string{catalystv1.EnvironmentFinalizer}
	}
	w.create(e)
	e.Status = catalystv1.EnvironmentStatus{ObservedGeneration: 1, Namespace: nsShop + "-" + name,
		Image: "registry.example.dev/shop/web:" + sha, ObservedCommit: sha}
	status(&e.Status)
	if err := w.c.Status().Update(w.ctx, e); err != nil {
		w.t.Fatalf("writing the status of environment %s: %v", name, err)
	}
}

// waitBundle waits until the bundle satisfies cond.
func (w *world) waitBundle(ns, name, what string, cond func(*werfv1.WerfBundle) bool) *werfv1.WerfBundle {
	w.t.Helper()
	return testenv.WaitFor(w.ctx, w.t, w.c, client.ObjectKey{Namespace: ns, Name: name}, what, cond)
}

func (w *world) getBundle(t *testing.T, ns, name string) *werfv1.WerfBundle {
	t.Helper()
	b := &werfv1.WerfBundle{}
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// podOutcomes decides what kwok does with a werf Job's pod, by the tag it deploys: fail it, keep
// it running a while, or complete it. It stands in for what werf does in the container.
type podOutcomes struct {
	mu   sync.Mutex
	fail map[string]bool
	slow map[string]time.Duration
}

func (p *podOutcomes) failTag(tag string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail == nil {
		p.fail = map[string]bool{}
	}
	p.fail[tag] = true
}

func (p *podOutcomes) slowTag(tag string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slow == nil {
		p.slow = map[string]time.Duration{}
	}
	p.slow[tag] = d
}

func (p *podOutcomes) decorate(tpl *corev1.PodTemplateSpec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tag := tpl.Annotations[werfbundle.AnnotationTag]
	if d := p.slow[tag]; d > 0 {
		tpl.Annotations[controlplane.DurationAnnotation] = d.String()
	}
	if p.fail[tag] {
		tpl.Labels[controlplane.FailLabel] = "true"
	}
}

// runOpts are how a command is run: on a terminal or not, its standard input, its environment,
// and whether the test's kubeconfig is passed (--kubeconfig).
type runOpts struct {
	tty          bool
	stdin        string
	env          map[string]string
	noKubeconfig bool
}

// result is what a command printed and its exit code.
type result struct {
	out, err string
	code     int
}

// run runs slipway in-process, as cli.Main does, over buffers.
func (w *world) run(o runOpts, args ...string) result {
	ios, in, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(o.tty)
	ios.SetStderrTTY(o.tty)
	ios.SetStdinTTY(o.tty)
	ios.SetWidth(200)
	in.WriteString(o.stdin)
	f := cli.NewFactory(ios, func(k string) string { return o.env[k] })
	f.Now = func() time.Time { return w.now }
	if !o.noKubeconfig {
		args = append(args, "--kubeconfig", w.env.Kubeconfig)
	}
	code := cli.Run(w.ctx, f, args)
	return result{out: out.String(), err: errOut.String(), code: code}
}

// expect fails the test unless the command exited with code.
func expect(t *testing.T, r result, code int, args ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("slipway %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.out, r.err)
	}
}

// contains fails the test unless s holds every part.
func contains(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s does not contain %q:\n%s", what, p, s)
		}
	}
}

var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uid>"},
	{regexp.MustCompile(`("?resourceVersion"?: )"\d+"`), `$1"<rv>"`},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "<registry>"},
	{regexp.MustCompile(`-apply-[0-9a-z]+`), "-apply-<hash>"},
	{regexp.MustCompile(`(Revision"?: "?)[0-9a-f]{16}\b`), "$1<revision>"},
	{regexp.MustCompile(`(sha256:)?\b[0-9a-f]{32,64}\b`), "<digest>"},
}

// normalise replaces what differs between runs (times, uids, versions, the registry's port,
// Job hashes, digests) with placeholders.
func normalise(s string) string {
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// updating reports whether golden files are rewritten: -update (the package's flag, defined by
// its manager tests) or SLIPWAY_UPDATE_GOLDEN=1.
func updating() bool {
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		return true
	}
	return os.Getenv("SLIPWAY_UPDATE_GOLDEN") != ""
}

// golden compares got with testdata/incluster/NAME.golden (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "incluster", name+".golden")
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (-update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s\n--- got:\n%s--- want:\n%s", name, path, got, want)
	}
}
