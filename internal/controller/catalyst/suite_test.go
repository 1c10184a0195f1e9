//go:build e2e

package catalyst_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package shares one full control plane: the controller-manager runs Deployments, Jobs,
// garbage collection and namespace deletion; kwok runs the pods.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Full, func(e *testenv.Env) { env = e })
}

var (
	identityOnce sync.Once
	identityCfg  *rest.Config
	identityErr  error
)

// operatorConfig is a rest.Config for the operator's user, bound to the generated RBAC of the
// systems these tests run (Catalyst, and WebApp beside it) only, so a missing RBAC marker fails
// the tests as it would fail in a cluster, and Catalyst's Jobs are its Role in the build namespace
// alone, as in the default install, not WerfBundle's rule for every namespace.
func operatorConfig(t testing.TB) *rest.Config {
	t.Helper()
	identityOnce.Do(func() { identityCfg, identityErr = installOperator(context.Background(), env) })
	if identityErr != nil {
		t.Fatal(identityErr)
	}
	return identityCfg
}

// installOperator installs the operator's identity (operatorConfig) and the namespaces it ships
// on e, and returns the rest.Config of that identity.
func installOperator(ctx context.Context, e *testenv.Env) (*rest.Config, error) {
	path, err := e.InstallOperatorIdentity(ctx, filepath.Join(e.LogDir, "operator.kubeconfig"), "catalyst", "webapp")
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, installShippedNamespaces(ctx, e.Client)
}

// installShippedNamespaces creates the namespaces config/manager ships (the build namespace among
// them) with their labels, or sets those labels on namespaces that exist, and the build
// namespace's NetworkPolicy and quota: the build pods of these tests meet the Pod Security level
// and the quota a cluster's install enforces.
func installShippedNamespaces(ctx context.Context, c client.Client) error {
	nss, err := config.Namespaces()
	if err != nil {
		return err
	}
	for _, want := range nss {
		live := &corev1.Namespace{}
		err := c.Get(ctx, client.ObjectKeyFromObject(want), live)
		if apierrors.IsNotFound(err) {
			if err := c.Create(ctx, want.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		base := live.DeepCopy()
		if live.Labels == nil {
			live.Labels = map[string]string{}
		}
		maps.Copy(live.Labels, want.Labels)
		if err := c.Patch(ctx, live, client.MergeFrom(base)); err != nil {
			return err
		}
	}
	return installBuildNamespaceGuards(ctx, c)
}

// installBuildNamespaceGuards creates the build namespace's NetworkPolicy and ResourceQuota as
// config/manager ships them, or brings their spec back to it.
func installBuildNamespaceGuards(ctx context.Context, c client.Client) error {
	guards, err := config.BuildNamespaceGuards()
	if err != nil {
		return err
	}
	for _, want := range guards {
		err := c.Create(ctx, want.DeepCopy())
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return err
			}
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(want.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
			return err
		}
		live.Object["spec"] = want.Object["spec"]
		if err := c.Update(ctx, live); err != nil {
			return err
		}
	}
	return nil
}

const (
	projectName   = "app"
	gitUser       = "bot"
	gitPassword   = "s3cret-git-password"
	buildNS       = catalyst.DefaultBuildNamespace
	previewDomain = "preview.example.dev"
)

// fixture is one test's world: a team namespace with the Project, the project namespace for the
// Environments, a git server holding the sample application in its three forms (behind basic
// auth), and a registry.
type fixture struct {
	t        testing.TB
	ctx      context.Context
	team     string
	projNS   string
	c        client.Client
	git      *gittest.Server
	repo     *gittest.Repository
	head     string
	reg      *registrytest.Registry
	logs     *fakeLogs
	outcomes *podOutcomes
	clock    *offsetClock
	envs     []*catalystv1alpha1.Environment
	// concurrency is the controllers' MaxConcurrentReconciles (default 8).
	concurrency int
	// writes counts the Environment controller's writes (the deploy engine has its own client).
	writes *testenv.CountingClient
	// wrap, when set, wraps the Environment controller's client (tests make writes fail with it).
	wrap func(client.Client) client.Client
	// podSecurityLevel is the level of environment namespaces (default: the operator's default).
	podSecurityLevel string
	// render bounds the rendering of charts (default: the deploy package's defaults).
	render deploy.RenderLimits
	// webApps runs the WebApp controller in the same manager, as an operator running both does.
	webApps bool
	// env is the control plane when the test brought its own (onEnv); nil: the package's.
	env *testenv.Env
	// namespaceAnnotations are the operator's --catalyst-namespace-annotation.
	namespaceAnnotations map[string]string
}

type fixtureOption func(*fixtureConfig)

type fixtureConfig struct {
	team        string
	registryOps []registrytest.Option
	env         *testenv.Env
	reg         *registrytest.Registry
}

// onEnv runs the fixture on a control plane of the test's own (one with a real node) and with a
// registry the test started (before the node, which must know it).
func onEnv(e *testenv.Env, reg *registrytest.Registry) fixtureOption {
	return func(c *fixtureConfig) { c.env, c.reg = e, reg }
}

func withTeam(team string) fixtureOption { return func(c *fixtureConfig) { c.team = team } }

func withRegistryAuth(user, password string) fixtureOption {
	return func(c *fixtureConfig) {
		c.registryOps = append(c.registryOps, registrytest.WithBasicAuth(user, password))
	}
}

func newFixture(t testing.TB, opts ...fixtureOption) *fixture {
	t.Helper()
	cfg := fixtureConfig{team: "t" + rand.String(6)}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, team: cfg.team, projNS: naming.ProjectNamespaceName(cfg.team, projectName), c: env.Client,
		logs: &fakeLogs{}, outcomes: &podOutcomes{}, clock: &offsetClock{}, env: cfg.env}
	if cfg.env != nil {
		f.c = cfg.env.Client
	}
	f.createNamespace(f.team)
	f.createNamespace(f.projNS)
	f.git = gittest.NewServer(t, gittest.WithBasicAuth(gitUser, gitPassword))
	f.repo = f.git.NewRepository(t, "org/app")
	f.head = f.commit("the sample application", sampleApp())
	f.reg = cfg.reg
	if f.reg == nil {
		f.reg = registrytest.StartDistribution(t, cfg.registryOps...)
	}
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-credentials", Namespace: f.team},
		StringData: map[string]string{"username": gitUser, "password": gitPassword},
	})
	return f
}

// sampleApp is gittest's application in its three forms plus a Dockerfile. Its pods meet the
// restricted pod-security standard of environment namespaces.
func sampleApp() gittest.Files {
	return gittest.Merge(
		gittest.HelmChart("charts/app", "app"),
		gittest.Manifests("deploy/manifests"),
		gittest.Kustomization("deploy/kustomize"),
		gittest.Dockerfile("Dockerfile"),
	)
}

func (f *fixture) commit(msg string, files gittest.Files) string {
	f.t.Helper()
	sha, err := f.repo.Commit(msg, files)
	if err != nil {
		f.t.Fatal(err)
	}
	return sha
}

func (f *fixture) createNamespace(name string) {
	f.t.Helper()
	if err := f.c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatal(err)
	}
}

func (f *fixture) create(o client.Object) {
	f.t.Helper()
	if err := f.c.Create(f.ctx, o); err != nil {
		f.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// start runs a manager with both reconcilers under the operator's RBAC until the test ends; the
// Environments the test made are deleted (and their namespaces awaited) before it stops.
func (f *fixture) start() {
	f.t.Helper()
	cfg := f.operatorConfig()
	envR := &catalyst.EnvironmentReconciler{
		PodSecurityLevel:     f.podSecurityLevel,
		BuildNamespace:       buildNS,
		IngressNamespace:     "ingress-nginx",
		PublicEgress:         true,
		NamespaceAnnotations: f.namespaceAnnotations,
		Logs:                 f.logs,
		DecoratePod:          f.outcomes.decorate,
		Clock:                f.clock,
		GitTimeout:           30 * time.Second,
	}
	projR := &catalyst.ProjectReconciler{Clock: f.clock, GitTimeout: 30 * time.Second, ValidationInterval: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	mopts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: buildNS, GracefulShutdownTimeout: 10 * time.Second,
		SkipControllerNameValidation: true, QPS: 500, Burst: 1000}
	mgr, err := operator.NewManager(ctx, cfg, scheme.New(), mopts, []operator.Controller{{
		Name: "catalyst",
		Setup: func(ctx context.Context, mgr ctrl.Manager, _ operator.Options) error {
			d, err := deploy.New(mgr.GetConfig(), deploy.Options{Render: f.render})
			if err != nil {
				return err
			}
			f.writes = testenv.CountWrites(mgr.GetClient())
			envR.Client, envR.APIReader, envR.Recorder, envR.Deployer = f.writes, mgr.GetAPIReader(), mgr.GetEventRecorder("catalyst-test"), d
			if f.wrap != nil {
				envR.Client = f.wrap(f.writes)
			}
			projR.Client, projR.APIReader, projR.Recorder = mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("catalyst-test")
			copts := controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: max(f.concurrency, 8)}
			if err := envR.SetupWithManager(ctx, mgr, copts); err != nil {
				return err
			}
			if f.webApps {
				wr := &webapp.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("webapp-test")}
				if err := wr.SetupWithManager(mgr, copts); err != nil {
					return err
				}
			}
			return projR.SetupWithManager(ctx, mgr, copts)
		},
		// As catalyst.Controller: the manager caches Jobs in the build namespace alone.
		JobNamespaces: func() []string { return []string{buildNS} },
	}})
	if err != nil {
		cancel()
		f.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			f.t.Errorf("manager: %v", err)
		}
	}()
	f.t.Cleanup(func() {
		cancel()
		<-done
	})
	f.t.Cleanup(f.deleteAll)
}

// operatorConfig is the package's operatorConfig, or the same identity installed on the
// fixture's own control plane.
func (f *fixture) operatorConfig() *rest.Config {
	f.t.Helper()
	if f.env == nil {
		return operatorConfig(f.t)
	}
	cfg, err := installOperator(f.ctx, f.env)
	if err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// deleteAll deletes the test's Environments and waits until they (and so their namespaces) are
// gone, so nothing outlives the test.
func (f *fixture) deleteAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, e := range f.envs {
		_ = f.c.Delete(ctx, e)
	}
	for _, e := range f.envs {
		f.waitGone(ctx, e)
	}
}

type projectOption func(*catalystv1alpha1.Project)

// project is a Project of the fixture's repository: manifests, the fixture's registry, a preview
// domain, the sample Service and a quota.
func (f *fixture) project(opts ...projectOption) *catalystv1alpha1.Project {
	p := &catalystv1alpha1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: projectName, Namespace: f.team},
		Spec: catalystv1alpha1.ProjectSpec{
			Source: catalystv1alpha1.ProjectSource{RepositoryURL: f.repo.URL, Branch: "main",
				SecretRef: &catalystv1alpha1.SecretReference{Name: "git-credentials"}},
			Deployment: catalystv1alpha1.DeploymentSpec{Type: catalystv1alpha1.DeploymentTypeManifest, Path: "deploy/manifests"},
			Registry:   &catalystv1alpha1.RegistrySpec{Repository: f.reg.Repository("org/app"), Insecure: true},
			Preview: catalystv1alpha1.PreviewSpec{Domain: previewDomain,
				Service: catalystv1alpha1.ServiceTarget{Name: "app", Port: 80}},
			Resources: catalystv1alpha1.ProjectResources{DefaultQuota: &catalystv1alpha1.Quota{
				CPU: ptr.To(resource.MustParse("1")), Memory: ptr.To(resource.MustParse("2Gi"))}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withDeployment(typ catalystv1alpha1.DeploymentType, path string) projectOption {
	return func(p *catalystv1alpha1.Project) { p.Spec.Deployment.Type, p.Spec.Deployment.Path = typ, path }
}

type envOption func(*catalystv1alpha1.Environment)

// environment is a pull-request Environment of the fixture's Project at commit.
func (f *fixture) environment(name, commit string, opts ...envOption) *catalystv1alpha1.Environment {
	e := &catalystv1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.projNS, Labels: map[string]string{
			naming.LabelTeam: f.team, naming.LabelProject: projectName, naming.LabelEnvironment: name}},
		Spec: catalystv1alpha1.EnvironmentSpec{
			ProjectRef: catalystv1alpha1.ProjectReference{Name: projectName},
			Type:       catalystv1alpha1.EnvironmentTypeDevelopment,
			Source:     catalystv1alpha1.EnvironmentSource{CommitSHA: commit, Branch: "main", PRNumber: 123},
			Config:     catalystv1alpha1.EnvironmentConfig{EnvVars: []catalystv1alpha1.EnvVar{{Name: "DEBUG", Value: "true"}}},
		},
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

// createEnvironment creates e and remembers it for the cleanup.
func (f *fixture) createEnvironment(e *catalystv1alpha1.Environment) *catalystv1alpha1.Environment {
	f.t.Helper()
	f.create(e)
	f.envs = append(f.envs, e)
	return e
}

// pushImage puts <repository>:<commit> into the registry, as an earlier build would have.
func (f *fixture) pushImage(commit string) {
	f.t.Helper()
	var opts []registrytest.PushOption
	if f.reg.Username != "" {
		opts = append(opts, registrytest.WithPushAuth(f.reg.Username, f.reg.Password))
	}
	registrytest.PushImage(f.t, f.reg.Host, "org/app", commit, opts...)
}

func (f *fixture) getEnv(e *catalystv1alpha1.Environment) *catalystv1alpha1.Environment {
	f.t.Helper()
	out := &catalystv1alpha1.Environment{}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(e), out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// waitEnv polls the Environment until cond holds.
func (f *fixture) waitEnv(e *catalystv1alpha1.Environment, what string, cond func(*catalystv1alpha1.Environment) bool) *catalystv1alpha1.Environment {
	f.t.Helper()
	return testenv.WaitFor(f.ctx, f.t, f.c, client.ObjectKeyFromObject(e), e.Name+": "+what, cond, func(last *catalystv1alpha1.Environment) string {
		return fmt.Sprintf("phase %s: %s", last.Status.Phase, readyMessage(last.Status.Conditions))
	})
}

// waitGone waits until the Environment no longer exists (ctx: the test's, or the cleanup's).
func (f *fixture) waitGone(ctx context.Context, e *catalystv1alpha1.Environment) {
	f.t.Helper()
	testenv.Eventually(ctx, f.t, "Environment "+e.Name+" is gone", func() (bool, error) {
		err := f.c.Get(ctx, client.ObjectKeyFromObject(e), &catalystv1alpha1.Environment{})
		return apierrors.IsNotFound(err), err
	})
}

// waitFailed waits until the Environment is Failed at its current generation.
func (f *fixture) waitFailed(e *catalystv1alpha1.Environment) *catalystv1alpha1.Environment {
	f.t.Helper()
	return f.waitEnv(e, "Failed", func(got *catalystv1alpha1.Environment) bool {
		return got.Status.Phase == catalystv1alpha1.PhaseFailed && got.Status.ObservedGeneration == got.Generation
	})
}

// waitReady waits until the Environment is Ready at its current generation and commit.
func (f *fixture) waitReady(e *catalystv1alpha1.Environment) *catalystv1alpha1.Environment {
	f.t.Helper()
	return f.waitEnv(e, "Ready", func(got *catalystv1alpha1.Environment) bool {
		return got.Status.Phase == catalystv1alpha1.PhaseReady && got.Status.ObservedGeneration == got.Generation &&
			got.Status.ObservedCommit == got.Spec.Source.CommitSHA
	})
}

func (f *fixture) waitProject(p *catalystv1alpha1.Project, what string, cond func(*catalystv1alpha1.Project) bool) *catalystv1alpha1.Project {
	f.t.Helper()
	return testenv.WaitFor(f.ctx, f.t, f.c, client.ObjectKeyFromObject(p), p.Name+": "+what, cond, func(last *catalystv1alpha1.Project) string {
		return readyMessage(last.Status.Conditions)
	})
}

func (f *fixture) waitProjectReady(p *catalystv1alpha1.Project) *catalystv1alpha1.Project {
	f.t.Helper()
	return f.waitProject(p, "Ready", func(got *catalystv1alpha1.Project) bool {
		c := condition(got.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue && got.Status.ObservedGeneration == got.Generation
	})
}

// buildJobs lists the Environment's build Jobs.
func (f *fixture) buildJobs(e *catalystv1alpha1.Environment) []batchv1.Job {
	f.t.Helper()
	var list batchv1.JobList
	if err := f.c.List(f.ctx, &list, client.InNamespace(buildNS), client.MatchingLabels{
		catalyst.LabelEnvironmentNamespace: e.Namespace, catalyst.LabelEnvironmentName: e.Name,
	}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// namespaceGone reports whether the namespace does not exist any more.
func (f *fixture) namespaceGone(name string) bool {
	err := f.c.Get(f.ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
	return apierrors.IsNotFound(err)
}

func condition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func readyMessage(conds []metav1.Condition) string {
	if c := condition(conds, "Ready"); c != nil {
		return c.Reason + ": " + c.Message
	}
	return "no Ready condition"
}

// kstatus reads an object the way kstatus (kubectl wait, Flux, Argo CD) would.
func kstatus(t testing.TB, obj any) status.Status {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// podOutcomes decides what kwok does with a build Job's pod: fail it for the commits listed, or
// complete it. It stands in for what Kaniko would do in the container.
type podOutcomes struct {
	mu          sync.Mutex
	failCommits map[string]bool
}

func (p *podOutcomes) failCommit(sha string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failCommits == nil {
		p.failCommits = map[string]bool{}
	}
	p.failCommits[sha] = true
}

func (p *podOutcomes) decorate(tpl *corev1.PodTemplateSpec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failCommits[tpl.Annotations[catalyst.AnnotationCommit]] {
		tpl.Labels[controlplane.FailLabel] = "true"
	}
}

// fakeLogs stands in for the build container's output, which kwok cannot produce: the one fake
// of these tests, at the LogReader boundary.
type fakeLogs struct{ calls atomic.Int32 }

func (l *fakeLogs) Tail(_ context.Context, namespace, pod, container string, _ int64) (string, error) {
	l.calls.Add(1)
	return fmt.Sprintf("INFO[0001] Retrieving image manifest busybox:1.36\nINFO[0002] RUN make\nmake: *** [build] Error 2\nerror building image: exit status 2 (%s/%s %s)\n", namespace, pod, container), nil
}

// offsetClock is the real clock moved forward by an offset the test sets (TTL tests).
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *offsetClock) advance(d time.Duration)         { c.offset.Add(int64(d)) }
