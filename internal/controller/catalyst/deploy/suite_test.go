package deploy_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package's tests share one light control plane (etcd and kube-apiserver): deploys are about
// what reaches the API server, not about pods running.
var env *testenv.Env

func TestMain(m *testing.M) {
	if probe := os.Getenv(sandboxProbeEnv); probe != "" {
		// TestRender_TheRendererCannotOpenASocketOrExec's child.
		os.Exit(deploy.SandboxProbe(os.Stdout, os.Getenv(sandboxProbeAddrEnv), probe == "confined"))
	}
	flag.Parse()
	if fuzzing() {
		// go test -run '^$' -fuzz FuzzParseManifests: the fuzz target needs no control plane,
		// and every fuzz worker process would start one.
		os.Exit(m.Run())
	}
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}

func fuzzing() bool {
	fuzz, worker := flag.Lookup("test.fuzz"), flag.Lookup("test.fuzzworker")
	return (fuzz != nil && fuzz.Value.String() != "") || (worker != nil && worker.Value.String() == "true")
}

// needEnv fails a test that needs the control plane when fuzzing started none.
func needEnv(tb testing.TB) {
	tb.Helper()
	if env == nil {
		tb.Fatal("no control plane while fuzzing: run go test -fuzz with -run '^$'")
	}
}

// Values every test injects.
var (
	testImage = deploy.Image{Repository: "registry.example.dev/org/app", Tag: "0123456789abcdef0123456789abcdef01234567"}
	testEnv   = []corev1.EnvVar{{Name: "DEBUG", Value: "true"}, {Name: "GREETING", Value: "hello"}}
)

// fixture is one test's world: an environment namespace, a git repository and an Engine.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	ns     string
	c      client.Client
	engine *deploy.Engine
	repo   *gittest.Repository
}

func newFixture(t *testing.T, opts ...func(*deploy.Options)) *fixture {
	t.Helper()
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	var o deploy.Options
	for _, opt := range opts {
		opt(&o)
	}
	engine, err := deploy.New(env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, ns: "env-" + rand.String(6), c: env.Client, engine: engine}
	if err := f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	bindDeployer(ctx, t, f.c, f.ns, deployerRole)
	srv := gittest.NewServer(t)
	f.repo = srv.NewRepository(t, "app")
	return f
}

// commit commits files and returns a directory with the repository checked out at that commit,
// fetched by gitsource as the controller does.
func (f *fixture) commit(files gittest.Files) string {
	f.t.Helper()
	sha, err := f.repo.Commit("change", files)
	if err != nil {
		f.t.Fatal(err)
	}
	snap, err := gitsource.Fetch(f.ctx, gitsource.Options{URL: f.repo.URL, Branch: "main", Commit: sha})
	if err != nil {
		f.t.Fatal(err)
	}
	dir := filepath.Join(f.t.TempDir(), sha)
	if err := snap.CheckoutDir(dir); err != nil {
		f.t.Fatal(err)
	}
	return dir
}

// request is a deploy of release "pr-1" into the fixture's namespace with the test injections.
func (f *fixture) request(typ catalystv1alpha1.DeploymentType, source, path string) deploy.Request {
	return deploy.Request{
		Namespace: f.ns, Release: "pr-1", Type: typ, Source: source, Path: path, ServiceAccount: deployerOf(f.ns),
		Image: testImage, Host: "pr-1.preview.example.dev", Env: testEnv,
		Labels: map[string]string{"catalyst.dev/environment": "pr-1", "catalyst.dev/project": "app"},
	}
}

func (f *fixture) deploy(req deploy.Request) deploy.Result {
	f.t.Helper()
	res, err := f.engine.Deploy(f.ctx, req)
	if err != nil {
		f.t.Fatalf("Deploy: %v", err)
	}
	return res
}

// deployFails deploys and expects an error wrapping want.
func (f *fixture) deployFails(req deploy.Request, want error) error {
	f.t.Helper()
	_, err := f.engine.Deploy(f.ctx, req)
	if !errors.Is(err, want) {
		f.t.Fatalf("Deploy: got error %v, want %v", err, want)
	}
	return err
}

func (f *fixture) get(name string, obj client.Object) {
	f.t.Helper()
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, obj); err != nil {
		f.t.Fatalf("getting %T %s: %v", obj, name, err)
	}
}

// gone asserts that the object does not exist.
func (f *fixture) gone(name string, obj client.Object) {
	f.t.Helper()
	err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, obj)
	if !apierrors.IsNotFound(err) {
		f.t.Errorf("%T %s: got %v, want NotFound", obj, name, err)
	}
}

// count is the number of objects of list's kind in the namespace with the labels.
func (f *fixture) count(list client.ObjectList, labels map[string]string) int {
	f.t.Helper()
	if err := f.c.List(f.ctx, list, client.InNamespace(f.ns), client.MatchingLabels(labels)); err != nil {
		f.t.Fatal(err)
	}
	return listLen(list)
}

func listLen(list client.ObjectList) int {
	switch l := list.(type) {
	case *corev1.SecretList:
		return len(l.Items)
	case *corev1.ConfigMapList:
		return len(l.Items)
	case *corev1.ServiceList:
		return len(l.Items)
	case *appsv1.DeploymentList:
		return len(l.Items)
	}
	panic("unexpected list type")
}

// checkInjected asserts that the Deployment app runs testImage with testEnv and carries the labels.
func (f *fixture) checkInjected(d *appsv1.Deployment, wantImage string) {
	f.t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != wantImage {
		f.t.Errorf("Deployment image %q, want %q", c.Image, wantImage)
	}
	for _, want := range testEnv {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == want.Name && e.Value == want.Value }) {
			f.t.Errorf("Deployment env %v lacks %s=%s", c.Env, want.Name, want.Value)
		}
	}
	if d.Labels["catalyst.dev/environment"] != "pr-1" {
		f.t.Errorf("Deployment labels %v lack catalyst.dev/environment=pr-1", d.Labels)
	}
}

func refNames(refs []deploy.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	slices.Sort(out)
	return out
}

// The environment's identity in these tests, as the Environment controller makes it: the
// ServiceAccount named after the fixture's namespace in the deployer namespace, which no object
// carries (impersonation does not look it up), bound in the fixture's namespace to the shipped
// deployer ClusterRole.
const (
	deployerNS   = "slipway-catalyst-deployers"
	deployerRole = "slipway-catalyst-deployer"
)

// deployerOf is the identity the deploys into ns act as.
func deployerOf(ns string) types.NamespacedName {
	return types.NamespacedName{Namespace: deployerNS, Name: ns}
}

var installRoleOnce sync.Once

// bindDeployer binds deployerOf(ns) in ns to clusterRole (the shipped deployer ClusterRole is
// installed first). No ServiceAccount object is made.
func bindDeployer(ctx context.Context, t testing.TB, c client.Client, ns, clusterRole string) {
	t.Helper()
	installRoleOnce.Do(func() { installDeployerRole(ctx, t, c) })
	as := deployerOf(ns)
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "catalyst-deployer", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: as.Name, Namespace: as.Namespace}}}
	if err := c.Create(ctx, rb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// installDeployerRole creates the deployer ClusterRole as make manifests generated it.
func installDeployerRole(ctx context.Context, t testing.TB, c client.Client) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "config", "rbac", "catalyst", "deployer", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := sigsyaml.Unmarshal(data, role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
