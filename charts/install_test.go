//go:build e2e

package charts_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// The test release: its namespace differs from config/'s slipway-system, so a namespace the
// templates fail to map shows.
const releaseName, releaseNS = "slipway", "slipway"

// TestChart_InstallsIntoFullControlPlane installs the chart with the Helm SDK into the full
// control plane (WerfBundle and WebApp controllers, the receiver on), in its default form of one
// Deployment per controller, and checks the objects it made. It then runs the built operator
// binary once per Deployment, with that Deployment's own arguments, as that Deployment's own
// ServiceAccount: each becomes ready and leads through its own Lease; WebApp's serves the
// webhooks with the certificate it wrote, WerfBundle's serves the receiver and reconciles a
// WerfBundle, each with the RBAC the chart bound to it alone. The Deployments' pods are admitted
// by the restricted namespace. An upgrade then keeps the CA bundle the operator injected.
func TestChart_InstallsIntoFullControlPlane(t *testing.T) {
	// The binary first: a cold build takes minutes, which must not count against the deadline.
	bin := operatorproc.Binary(t)
	env := testenv.New(t, testenv.Full)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := env.Client
	createReleaseNamespace(ctx, t, c)

	const values = "controllers: [werfbundle, webapp]\nreplicas: 1\nreceiver: {enabled: true}\n"
	rel := install(ctx, t, env, values)
	if rel.Info.Status != "deployed" {
		t.Fatalf("release status %s", rel.Info.Status)
	}

	// RBAC: the common role bound to both ServiceAccounts, each controller's to its own alone.
	for name, want := range map[string][]string{
		"slipway-common":     {"slipway-werfbundle", "slipway-webapp"},
		"slipway-werfbundle": {"slipway-werfbundle"},
		"slipway-webapp":     {"slipway-webapp"},
	} {
		var b rbacv1.ClusterRoleBinding
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &b); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == releaseNS {
				got = append(got, s.Name)
			}
		}
		if !slices.Equal(got, want) || len(b.Subjects) != len(want) {
			t.Errorf("ClusterRoleBinding %s subjects %+v, want the ServiceAccounts %v", name, b.Subjects, want)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{}); err != nil {
			t.Error(err)
		}
	}
	for _, name := range []string{"slipway-catalyst", "slipway-catalyst-deployer"} {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s ClusterRole installed without its controller: %v", name, err)
		}
	}
	for _, name := range []string{"slipway-common", "slipway-werfbundle", "slipway-webapp"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: name}, &rbacv1.RoleBinding{}); err != nil {
			t.Error(err)
		}
	}
	// Webhooks and Services.
	for _, o := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "slipway-webhook-service", Namespace: releaseNS}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "slipway-werfbundle-metrics", Namespace: releaseNS}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "slipway-webapp-metrics", Namespace: releaseNS}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "slipway-werfbundle-receiver", Namespace: releaseNS}},
	} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Error(err)
		}
	}
	checkWebhooks(ctx, t, c)

	// Each Deployment's pod passes the namespace's restricted Pod Security and becomes available
	// (kwok runs it).
	deployments := map[string]*appsv1.Deployment{}
	for _, name := range []string{"slipway-werfbundle", "slipway-webapp"} {
		d := &appsv1.Deployment{}
		testenv.Eventually(ctx, t, "Deployment "+name+" is available", func() (bool, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: name}, d); err != nil {
				return false, err
			}
			return d.Status.AvailableReplicas == 1, nil
		})
		deployments[name] = d
	}

	// The operator binary accepts each Deployment's arguments: those the Deployment holds, with
	// $(POD_NAMESPACE) expanded as the kubelet would, and then only what a process outside the
	// cluster needs (its kubeconfig, free ports, a certificate directory of its own), as the
	// Deployment's ServiceAccount.
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	receiverAddr := testenv.FreeAddr(t)
	probes := map[string]string{}
	for name, d := range deployments {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa != name {
			t.Fatalf("Deployment %s runs as %s, want its own ServiceAccount", name, sa)
		}
		kubeconfig, err := env.UserKubeconfig(filepath.Join(t.TempDir(), name+".kubeconfig"),
			"system:serviceaccount:"+releaseNS+":"+sa,
			"system:serviceaccounts", "system:serviceaccounts:"+releaseNS, "system:authenticated")
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", releaseNS))
		}
		system := strings.TrimPrefix(name, "slipway-")
		if !slices.Contains(args, "--controllers="+system) || !slices.Contains(args, "--namespace="+releaseNS) {
			t.Fatalf("Deployment %s args %v", name, args)
		}
		probes[name] = testenv.FreeAddr(t)
		args = append(args,
			"--kubeconfig="+kubeconfig,
			"--metrics-bind-address="+testenv.FreeAddr(t),
			"--health-probe-bind-address="+probes[name],
		)
		switch system {
		case "webapp":
			args = append(args,
				"--webhook-port="+strings.Split(testenv.FreeAddr(t), ":")[1],
				"--webhook-cert-dir="+t.TempDir(),
				"--webhook-cert-mirror=true",
				"--webhook-cert-dns-names=localhost",
			)
		case "werfbundle":
			args = append(args,
				"--werfbundle-webhook-bind-address="+receiverAddr,
				"--werfbundle-webhook-secret-file="+secretFile,
			)
		}
		runOperator(t, bin, args)
	}

	for name, probe := range probes {
		testenv.Eventually(ctx, t, name+" is ready", func() (bool, error) {
			return httpStatus("http://"+probe+"/readyz") == http.StatusOK, nil
		})
		lease := name + ".slipway.dev"
		testenv.Eventually(ctx, t, name+" holds its own Lease "+lease+" in the release namespace", func() (bool, error) {
			var l coordinationv1.Lease
			if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: lease}, &l); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return ptr.Deref(l.Spec.HolderIdentity, "") != "", nil
		})
	}
	// The webhook certificate was written where the chart's RBAC allows and mounts.
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: "slipway-webhook-cert"}, &corev1.Secret{}); err != nil {
		t.Errorf("webhook certificate Secret: %v", err)
	}
	// The receiver is on (every replica of the WerfBundle Deployment serves it) and takes a push.
	testenv.Eventually(ctx, t, "the receiver accepts a push", func() (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+receiverAddr+"/hook",
			bytes.NewReader([]byte(`{"repository": "registry.example.com/app", "tag": "1.0.0"}`)))
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted, nil
	})
	// The WerfBundle controller works with the RBAC the chart bound to its ServiceAccount: it
	// reads the bundle and writes its status (the registry does not exist: the bundle retries,
	// with conditions that say why).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	b := werfBundle(ns.Name)
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(ctx, t, c, client.ObjectKeyFromObject(b), "the WerfBundle has a status", func(got *werfv1.WerfBundle) bool {
		return len(got.Status.Conditions) > 0
	})

	// An upgrade keeps the CA bundle the operator injected into the webhook configurations: the
	// chart does not set the field, and server-side apply leaves it to its owner.
	ch := loadChart(t)
	ch.Metadata.Version = "0.2.0"
	up := action.NewUpgrade(helmConfig(t, env))
	up.Namespace = releaseNS
	up.ServerSideApply = "true"
	up.WaitStrategy = kube.HookOnlyStrategy
	if _, err := up.RunWithContext(ctx, releaseName, ch, parseValues(t, values)); err != nil {
		t.Fatal(err)
	}
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "slipway-mutating-webhook-configuration"}, &m); err != nil {
		t.Fatal(err)
	}
	if m.Labels["helm.sh/chart"] != "slipway-0.2.0" {
		t.Errorf("after the upgrade: chart label %q", m.Labels["helm.sh/chart"])
	}
	for _, w := range m.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			t.Errorf("webhook %s lost its CA bundle in the upgrade", w.Name)
		}
	}
}

// TestChart_UpgradeKeepsCustomResources installs the chart in its single-Deployment form (the
// former default), creates a WebApp and a WerfBundle, upgrades to a bumped chart version in the
// default form of one Deployment per controller, and checks that the custom resources and the
// CRDs are untouched (same uid, resourceVersion and spec) while the release moved: the single
// Deployment and its ServiceAccount are gone, each controller has its own, and the common
// bindings name the new ServiceAccounts.
func TestChart_UpgradeKeepsCustomResources(t *testing.T) {
	env := testenv.New(t, testenv.Light)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := env.Client
	createReleaseNamespace(ctx, t, c)
	// No WebApp controller, hence no admission webhook to serve while the WebApp is created.
	install(ctx, t, env, "singleDeployment: true\ncontrollers: [werfbundle, catalyst]\n")
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: "slipway-operator"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("the single Deployment: %v", err)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	app := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
		Spec:       webappv1.WebAppSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](2), Port: 8080},
	}
	bundle := werfBundle(ns.Name)
	for _, o := range []client.Object{app, bundle} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var crdsBefore apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crdsBefore); err != nil {
		t.Fatal(err)
	}

	ch := loadChart(t)
	ch.Metadata.Version = "0.2.0"
	cfg := helmConfig(t, env)
	up := action.NewUpgrade(cfg)
	up.Namespace = releaseNS
	up.ServerSideApply = "true"
	up.WaitStrategy = kube.HookOnlyStrategy
	r, err := up.RunWithContext(ctx, releaseName, ch, parseValues(t, "controllers: [werfbundle, catalyst]\nreplicas: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	rel := r.(*release.Release)
	if rel.Version != 2 || rel.Chart.Metadata.Version != "0.2.0" || rel.Info.Status != "deployed" {
		t.Fatalf("release after the upgrade: revision %d, chart %s, %s", rel.Version, rel.Chart.Metadata.Version, rel.Info.Status)
	}
	for _, name := range []string{"slipway-werfbundle", "slipway-catalyst"} {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: name}, &d); err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 2 || d.Labels["helm.sh/chart"] != "slipway-0.2.0" || d.Spec.Template.Spec.ServiceAccountName != name {
			t.Errorf("Deployment %s after the upgrade: %d replicas, chart label %s, ServiceAccount %s", name, *d.Spec.Replicas,
				d.Labels["helm.sh/chart"], d.Spec.Template.Spec.ServiceAccountName)
		}
	}
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: "slipway-operator"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: "slipway-operator"}},
	} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T slipway-operator after the upgrade: %v, want it removed", o, err)
		}
	}
	var common rbacv1.ClusterRoleBinding
	if err := c.Get(ctx, client.ObjectKey{Name: "slipway-common"}, &common); err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, s := range common.Subjects {
		subjects = append(subjects, s.Name)
	}
	if want := []string{"slipway-werfbundle", "slipway-catalyst"}; !slices.Equal(subjects, want) {
		t.Errorf("ClusterRoleBinding slipway-common binds %v after the upgrade, want %v", subjects, want)
	}

	gotApp := &webappv1.WebApp{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), gotApp); err != nil {
		t.Fatal(err)
	}
	gotBundle := &werfv1.WerfBundle{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(bundle), gotBundle); err != nil {
		t.Fatal(err)
	}
	if gotApp.UID != app.UID || gotApp.ResourceVersion != app.ResourceVersion || !equality.Semantic.DeepEqual(gotApp.Spec, app.Spec) {
		t.Errorf("WebApp changed by the upgrade: uid %s→%s, resourceVersion %s→%s", app.UID, gotApp.UID, app.ResourceVersion, gotApp.ResourceVersion)
	}
	if gotBundle.UID != bundle.UID || gotBundle.ResourceVersion != bundle.ResourceVersion || !equality.Semantic.DeepEqual(gotBundle.Spec, bundle.Spec) {
		t.Errorf("WerfBundle changed by the upgrade: uid %s→%s, resourceVersion %s→%s", bundle.UID, gotBundle.UID, bundle.ResourceVersion, gotBundle.ResourceVersion)
	}
	for _, before := range crdsBefore.Items {
		var after apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: before.Name}, &after); err != nil {
			t.Errorf("CRD %s after the upgrade: %v", before.Name, err)
			continue
		}
		if after.UID != before.UID {
			t.Errorf("CRD %s was replaced by the upgrade", before.Name)
		}
	}
}

// createReleaseNamespace creates the release namespace labelled as the chart's notes ask:
// Pod Security restricted.
func createReleaseNamespace(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
}

func helmConfig(t *testing.T, env *testenv.Env) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = ptr.To(env.Kubeconfig)
	flags.Namespace = ptr.To(releaseNS)
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, releaseNS, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// install installs the chart as release "slipway" in namespace "slipway", server-side applied.
func install(ctx context.Context, t *testing.T, env *testenv.Env, values string) *release.Release {
	t.Helper()
	in := action.NewInstall(helmConfig(t, env))
	in.ReleaseName, in.Namespace = releaseName, releaseNS
	in.ServerSideApply = true
	in.WaitStrategy = kube.HookOnlyStrategy
	r, err := in.RunWithContext(ctx, loadChart(t), parseValues(t, values))
	if err != nil {
		t.Fatal(err)
	}
	return r.(*release.Release)
}

func checkWebhooks(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "slipway-mutating-webhook-configuration"}, &m); err != nil {
		t.Fatal(err)
	}
	for _, w := range m.Webhooks {
		if s := w.ClientConfig.Service; s == nil || s.Namespace != releaseNS || s.Name != "slipway-webhook-service" {
			t.Errorf("webhook %s calls %+v, want slipway-webhook-service in %s", w.Name, w.ClientConfig.Service, releaseNS)
		}
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "slipway-validating-webhook-configuration"}, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Webhooks) == 0 {
		t.Error("no validating webhooks installed")
	}
}

func werfBundle(ns string) *werfv1.WerfBundle {
	return &werfv1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: "registry.example.invalid/app", PollInterval: &metav1.Duration{Duration: time.Hour}},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "deployer"},
		},
	}
}

// runOperator starts the operator binary with exactly args until the test ends; its log is shown
// when the test fails. (operatorproc.Start puts its own addresses before the arguments, where the
// chart's would override them.)
func runOperator(t *testing.T, bin string, args []string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "operator.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("operator (%s) log:\n%s", strings.Join(args, " "), data)
		}
	})
}

func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
