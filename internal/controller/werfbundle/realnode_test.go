//go:build e2e

package werfbundle_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/ociimage"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// ContractTestImage is the WerfBundle contract test image (testdata/werfcontract): a stand-in
// for werf that checks the Job's contract and deploys nothing. Tests only; never the default.
const ContractTestImage = "slipway.local/werf-contract-test:1"

// realNodeWorld is a control plane with a real node, a registry the node's pods reach, and the
// operator's WerfBundle controller running with the contract test image.
type realNodeWorld struct {
	t    *testing.T
	ctx  context.Context
	cp   *controlplane.ControlPlane
	node *controlplane.RealNode
	reg  *registrytest.Registry
	ns   string
	// jobEnv is what --werfbundle-job-env gives the Jobs: the API server's address.
	jobEnv []corev1.EnvVar
}

// TestWerfBundle_JobRunsOnARealNode needs real containers: kwok only says a Job completed. Here
// the converge Job's pod starts on the real node from the contract test image under Pod Security
// restricted (non-root, read-only root file system, no capabilities), with its values Secret and
// ServiceAccount token mounted, talks to the API server and the registry, and exits as werf would;
// the operator reads the outcome as in a cluster. The control plane is the test's own (started
// with its node): the shared one of the package has no ServiceAccount tokens and no API server
// that pods reach.
func TestWerfBundle_JobRunsOnARealNode(t *testing.T) {
	began := time.Now()
	// Registered first, so it runs last: the whole test, parallel subtests and the stop included.
	t.Cleanup(func() { t.Logf("the whole test took %s", time.Since(began).Round(time.Millisecond)) })
	w := startRealNodeWorld(t)
	// A failing Job runs twice (backoffLimit 1), ten seconds apart: the failing bundles are made
	// first and checked last, so that their Jobs run while the other subtests do.
	broken, noRights := w.startBroken(t), w.startWithoutRights(t)
	t.Run("Succeeds", w.jobSucceeds)
	t.Run("PrivateRegistryCredentialsReachWerf", w.privateRegistry)
	t.Run("RegistryCAReachesWerf", w.registryCA)
	t.Run("DriftCheckJobRuns", w.driftCheck)
	t.Run("FailureLastLineReachesStatus", func(t *testing.T) { w.jobFails(t, broken) })
	t.Run("ServiceAccountWithoutRightsIsNamed", func(t *testing.T) { w.jobWithoutRights(t, noRights) })
}

func startRealNodeWorld(t *testing.T) *realNodeWorld {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	img := buildContractImage(ctx, t)
	start := time.Now()
	cp := testenv.NewWithRealNode(t, controlplane.RealNodeOptions{})
	t.Logf("control plane with its real node up in %s", time.Since(start).Round(time.Millisecond))
	w := &realNodeWorld{t: t, ctx: ctx, cp: cp, node: cp.RealNodes()[0], ns: "werf-real"}
	importStart := time.Now()
	if err := w.node.ImportImages(ctx, ContractTestImage, []v1.Image{img}); err != nil {
		t.Fatal(err)
	}
	t.Logf("contract test image imported in %s", time.Since(importStart).Round(time.Millisecond))
	// The registry listens on the node's gateway: the operator (on this machine) and the Job's
	// pod reach it at the same address, as the bundle's URL requires.
	w.reg = registrytest.StartDistribution(t, registrytest.WithListenIP(w.node.Gateway))
	registrytest.PushBundle(t, w.reg.Host, "demo/app", "1.0.0")
	w.setUpNamespace(t, w.ns, true)
	w.startOperator()
	return w
}

// buildContractImage builds testdata/werfcontract into an image with internal/ociimage, the
// program at /usr/local/bin/werf: the Job runs the command `werf`, found through PATH as in the
// werf image.
func buildContractImage(ctx context.Context, t *testing.T) v1.Image {
	start := time.Now()
	bin := filepath.Join(t.TempDir(), "werf")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/werfcontract")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the contract test program: %v\n%s", err, out)
	}
	img, err := ociimage.Build(ociimage.Spec{Binary: bin, Path: "/usr/local/bin/werf",
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Created: time.Unix(0, 0),
		Labels: map[string]string{"org.opencontainers.image.title": "werf contract test image (slipway tests only)"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("contract test image built in %s", time.Since(start).Round(time.Millisecond))
	return img
}

// setUpNamespace makes a bundles' namespace as a user would for werf (docs/werfbundle.md,
// Setting up a target namespace: a ServiceAccount, bound to admin when deployer is set), enforcing
// Pod Security restricted, and annotated so that all its pods run on the real node.
func (w *realNodeWorld) setUpNamespace(t *testing.T, name string, deployer bool) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: controlplane.RealNodeNamespaceAnnotations(),
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	objs := []client.Object{ns, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: name}}}
	if deployer {
		objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "werf-converge", Namespace: name}}})
	}
	for _, o := range objs {
		createObject(w.ctx, t, w.cp.Client, o)
	}
}

// startOperator runs the WerfBundle controller as the operator binary wires it (its flags, its
// log reader through pods/log), as the operator's RBAC user: the werf image is the contract test
// image, and the Jobs get the API server's address on the gateway (no kube-proxy serves the
// kubernetes Service here) through --werfbundle-job-env.
func (w *realNodeWorld) startOperator() {
	t := w.t
	path, err := w.cp.InstallOperatorIdentity(w.ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"), "werfbundle")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(w.cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, port := api.Hostname(), api.Port()
	w.jobEnv = []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: host}, {Name: "KUBERNETES_SERVICE_PORT", Value: port}}
	wb := werfbundle.Controller()
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	wb.BindFlags(fs)
	if err := fs.Parse([]string{"--werfbundle-werf-image=" + ContractTestImage,
		"--werfbundle-job-env=KUBERNETES_SERVICE_HOST=" + host, "--werfbundle-job-env=KUBERNETES_SERVICE_PORT=" + port}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	mgr, err := operator.NewManager(ctx, cfg, scheme.New(), operator.Options{MetricsAddr: "0", ProbeAddr: "0",
		Namespace: controlplane.OperatorNamespace, GracefulShutdownTimeout: 10 * time.Second, SkipControllerNameValidation: true},
		[]operator.Controller{wb})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// deploy creates a bundle of demo/app with the given values sources and waits until its Job
// has finished; it returns the bundle, the Job and the Job's pod.
func (w *realNodeWorld) deploy(t *testing.T, ns, name string, values ...werfv1.ValuesReference) (*werfv1.WerfBundle, *batchv1.Job, *corev1.Pod) {
	b := &werfv1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: w.reg.Repository("demo/app"), Insecure: true},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge", ValuesFrom: values},
		},
	}
	return w.run(t, b)
}

// deployFrom is deploy from repo with the registry credentials of the Secret secretRef.
func (w *realNodeWorld) deployFrom(t *testing.T, ns, name, repo, secretRef string) (*werfv1.WerfBundle, *batchv1.Job, *corev1.Pod) {
	b := &werfv1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: repo, Insecure: true, SecretRef: &corev1.LocalObjectReference{Name: secretRef}},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
		},
	}
	return w.run(t, b)
}

// run creates the bundle and waits until its Job has finished.
func (w *realNodeWorld) run(t *testing.T, b *werfv1.WerfBundle) (*werfv1.WerfBundle, *batchv1.Job, *corev1.Pod) {
	return w.finished(t, w.create(t, b))
}

// started is a bundle created at a time.
type started struct {
	bundle  *werfv1.WerfBundle
	created time.Time
}

func (w *realNodeWorld) create(t *testing.T, b *werfv1.WerfBundle) started {
	created := time.Now()
	createObject(w.ctx, t, w.cp.Client, b)
	return started{bundle: b, created: created}
}

// finished waits until the bundle's Job has finished and returns it with its last pod, which
// must have run on the real node.
func (w *realNodeWorld) finished(t *testing.T, s started) (*werfv1.WerfBundle, *batchv1.Job, *corev1.Pod) {
	c := w.cp.Client
	var job batchv1.Job
	var jobSeen time.Time
	realPoll(w.ctx, t, "the bundle's Job finished", func() (bool, string) {
		var jobs batchv1.JobList
		if err := c.List(w.ctx, &jobs, client.InNamespace(s.bundle.Namespace),
			client.MatchingLabels{werfbundle.LabelBundleName: s.bundle.Name}); err != nil {
			return false, err.Error()
		}
		if len(jobs.Items) != 1 {
			return false, "Jobs: " + jobNames(jobs.Items)
		}
		job = jobs.Items[0]
		if jobSeen.IsZero() {
			jobSeen = time.Now()
		}
		return jobDone(&job), describeJob(w, &job)
	})
	t.Logf("bundle created → Job finished: %s; Job seen → finished: %s; Job start → end (whole seconds): %s",
		time.Since(s.created).Round(time.Millisecond), time.Since(jobSeen).Round(time.Millisecond), jobRunTime(&job))
	pods := w.podsOf(t, &job)
	last := &pods[len(pods)-1]
	if last.Spec.NodeName != w.node.Name {
		t.Errorf("the Job's pod ran on %q, want the real node %q", last.Spec.NodeName, w.node.Name)
	}
	return s.bundle, &job, last
}

func (w *realNodeWorld) jobSucceeds(t *testing.T) {
	c := w.cp.Client
	createObject(w.ctx, t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-values", Namespace: w.ns},
		Data: map[string]string{"values.yaml": "replicas: 1\nimage:\n  tag: \"2.4\"\ningress: {host: app.example}\n"}})
	createObject(w.ctx, t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-secrets", Namespace: w.ns},
		StringData: map[string]string{"values.yaml": "replicas: 3\ndatabase: {password: s3cret}\n"}})
	b, job, pod := w.deploy(t, w.ns, "app",
		werfv1.ValuesReference{ConfigMapRef: &werfv1.ValuesSource{Name: "app-values"}},
		werfv1.ValuesReference{SecretRef: &werfv1.ValuesSource{Name: "app-secrets"}})
	if !jobSucceeded(job) {
		t.Fatalf("the Job failed: %s\n%s", describeJob(w, job), terminationMessage(pod))
	}
	var report struct {
		Command, Repo, Tag, Release, Namespace, Home, TmpDir, BundleDigest string
		UID                                                                int
		ReadOnlyRoot                                                       bool
		ValuesFiles, WerfEnv                                               []string
		Values                                                             map[string]any
	}
	if err := json.Unmarshal([]byte(terminationMessage(pod)), &report); err != nil {
		t.Fatalf("the contract test image's report: %v\n%s", err, terminationMessage(pod))
	}
	want := map[string]any{"replicas": float64(3), "image": map[string]any{"tag": "2.4"},
		"ingress": map[string]any{"host": "app.example"}, "database": map[string]any{"password": "s3cret"}}
	if !reflect.DeepEqual(report.Values, want) {
		t.Errorf("werf would read the values %v, want %v (the sources merged in order)", report.Values, want)
	}
	if report.Command != "bundle apply" || report.Repo != b.Spec.Registry.URL || report.Tag != "1.0.0" ||
		report.Release != "app" || report.Namespace != w.ns || report.BundleDigest == "" {
		t.Errorf("werf would run %q for %s:%s, release %q in %q (bundle digest %q)",
			report.Command, report.Repo, report.Tag, report.Release, report.Namespace, report.BundleDigest)
	}
	if report.UID != ociimage.UID || !report.ReadOnlyRoot || report.Home != "/tmp" || report.TmpDir != "/tmp" ||
		!slices.Equal(report.WerfEnv, []string{"WERF_TMP_DIR=/tmp"}) || len(report.ValuesFiles) != 1 {
		t.Errorf("werf would run as uid %d (read-only root %t) with HOME %q, temporary directory %q, %v and values files %v",
			report.UID, report.ReadOnlyRoot, report.Home, report.TmpDir, report.WerfEnv, report.ValuesFiles)
	}
	got := w.waitBundle(t, b, func(b *werfv1.WerfBundle) bool { return b.Status.LastFinishedJob == job.Name })
	if got.Status.Phase != werfv1.PhaseSynced || got.Status.LastAppliedTag != "1.0.0" || got.Status.LastSyncTime == nil {
		t.Errorf("bundle phase %s, tag %q, synced %v; want Synced with 1.0.0 (%s)", got.Status.Phase,
			got.Status.LastAppliedTag, got.Status.LastSyncTime, got.Status.LastErrorMessage)
	}
	// kube-apiserver reads the pod's log from the node's kubelet: the stored log is werf's whole
	// output, its last line included (a success leaves no termination message to fall back on).
	if log := w.storedLog(t, got); !strings.HasPrefix(log, "Version: werf-contract-test") ||
		!strings.Contains(log, "the Job's contract holds for bundle") || strings.HasPrefix(log, joblog.TerminationNote) {
		t.Errorf("the stored log is not the successful run's log:\n%s", log)
	}
}

// failWhy is what the broken bundle's values tell the contract test image to fail with.
const failWhy = "the release's pre-install hook failed (asked by the test)"

// startBroken creates a bundle whose values set the contract test image's failure switch.
func (w *realNodeWorld) startBroken(t *testing.T) started {
	createObject(w.ctx, t, w.cp.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "broken-values", Namespace: w.ns},
		Data: map[string]string{"values.yaml": "werfContractTest:\n  fail: \"" + failWhy + "\"\n"}})
	return w.create(t, &werfv1.WerfBundle{ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: w.ns},
		Spec: werfv1.WerfBundleSpec{Registry: werfv1.RegistrySpec{URL: w.reg.Repository("demo/app"), Insecure: true},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge",
				ValuesFrom: []werfv1.ValuesReference{{ConfigMapRef: &werfv1.ValuesSource{Name: "broken-values"}}}}}})
}

// jobFails: the broken bundle's Job fails with werf's last line, which reaches the status.
func (w *realNodeWorld) jobFails(t *testing.T, s started) {
	b, job, pod := w.finished(t, s)
	if jobSucceeded(job) {
		t.Fatalf("the Job succeeded, want a failure")
	}
	lastLine := "Error: werf contract test: failing on purpose (values werfContractTest.fail): " + failWhy
	if msg := strings.TrimRight(terminationMessage(pod), "\n"); !strings.HasSuffix(msg, lastLine) {
		t.Errorf("the failed container's log ends with %q, want %q", msg, lastLine)
	}
	got := w.waitBundle(t, b, func(b *werfv1.WerfBundle) bool { return b.Status.LastFinishedJob == job.Name })
	if got.Status.Phase != werfv1.PhaseFailed || got.Status.LastFailedRevision == "" {
		t.Errorf("bundle phase %s, failed revision %q; want Failed", got.Status.Phase, got.Status.LastFailedRevision)
	}
	if ready := condition(got, "Ready"); ready == nil || ready.Reason != werfbundle.ReasonDeployFailed {
		t.Errorf("Ready condition %+v, want reason %s", ready, werfbundle.ReasonDeployFailed)
	}
	if msg := got.Status.LastErrorMessage; !strings.HasSuffix(msg, "\n"+lastLine) {
		t.Errorf("lastErrorMessage does not end with the log's last line %q:\n%s", lastLine, msg)
	}
	if log := strings.TrimRight(w.storedLog(t, got), "\n"); !strings.HasSuffix(log, lastLine) {
		t.Errorf("the stored log does not end with %q:\n%s", lastLine, log)
	}
	t.Logf("lastErrorMessage:\n%s", got.Status.LastErrorMessage)
}

// privateRegistry: the bundle is in a registry that wants a password. The operator polls it with
// the bundle's secretRef, and the Job's werf finds the same credentials in the config.json that
// --docker-config names (mounted from the Job's Secret) and pulls the bundle's manifest with them.
func (w *realNodeWorld) privateRegistry(t *testing.T) {
	reg := registrytest.StartDistribution(t, registrytest.WithListenIP(w.node.Gateway), registrytest.WithBasicAuth("deployer", "s3cret-pass"))
	registrytest.PushBundle(t, reg.Host, "private/app", "2.0.0", registrytest.WithPushAuth("deployer", "s3cret-pass"))
	createObject(w.ctx, t, w.cp.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-creds", Namespace: w.ns},
		StringData: map[string]string{"username": "deployer", "password": "s3cret-pass"}})
	b, job, pod := w.deployFrom(t, w.ns, "private", reg.Repository("private/app"), "registry-creds")
	if !jobSucceeded(job) {
		t.Fatalf("the Job failed: %s\n%s", describeJob(w, job), terminationMessage(pod))
	}
	var report struct{ DockerConfig, BundleDigest, Tag string }
	if err := json.Unmarshal([]byte(terminationMessage(pod)), &report); err != nil {
		t.Fatalf("the contract test image's report: %v\n%s", err, terminationMessage(pod))
	}
	if report.DockerConfig != "/werf/docker" || report.BundleDigest == "" || report.Tag != "2.0.0" {
		t.Errorf("werf would read the bundle %s with --docker-config=%q (digest %q), want 2.0.0 with /werf/docker",
			report.Tag, report.DockerConfig, report.BundleDigest)
	}
	got := w.waitBundle(t, b, func(b *werfv1.WerfBundle) bool { return b.Status.LastFinishedJob == job.Name })
	if got.Status.Phase != werfv1.PhaseSynced || got.Status.LastAppliedTag != "2.0.0" {
		t.Errorf("bundle phase %s with tag %q, want Synced with 2.0.0 (%s)", got.Status.Phase, got.Status.LastAppliedTag, got.Status.LastErrorMessage)
	}
}

// registryCA: the bundle is in a registry served over TLS with a private CA. The operator polls it
// with the bundle's certSecretRef, and werf in the Job trusts it through the CA mounted at
// /werf/ca and named by SSL_CERT_DIR (Go's and werf's way to add roots), with no other CA in the
// image.
func (w *realNodeWorld) registryCA(t *testing.T) {
	upstream, err := url.Parse(w.reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	cert, caPEM := selfSignedCert(t, w.node.Gateway)
	l, err := net.Listen("tcp", net.JoinHostPort(w.node.Gateway.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(upstream))
	_ = srv.Listener.Close() // the listener httptest made, replaced by one on the gateway
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	createObject(w.ctx, t, w.cp.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-ca", Namespace: w.ns},
		Data: map[string][]byte{"ca.crt": caPEM}})
	repo := strings.TrimPrefix(srv.URL, "https://") + "/demo/app"
	b := &werfv1.WerfBundle{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: w.ns},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: repo, CertSecretRef: &corev1.LocalObjectReference{Name: "registry-ca"}},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
		}}
	b, job, pod := w.run(t, b)
	if !jobSucceeded(job) {
		t.Fatalf("the Job failed: %s\n%s", describeJob(w, job), terminationMessage(pod))
	}
	var report struct{ RegistryURL, BundleDigest string }
	if err := json.Unmarshal([]byte(terminationMessage(pod)), &report); err != nil {
		t.Fatalf("the contract test image's report: %v\n%s", err, terminationMessage(pod))
	}
	if !strings.HasPrefix(report.RegistryURL, "https://"+w.node.Gateway.String()+":") || report.BundleDigest == "" {
		t.Errorf("werf would read the bundle at %q (digest %q), want it over TLS", report.RegistryURL, report.BundleDigest)
	}
	got := w.waitBundle(t, b, func(b *werfv1.WerfBundle) bool { return b.Status.LastFinishedJob == job.Name })
	if got.Status.Phase != werfv1.PhaseSynced || got.Status.LastAppliedTag != "1.0.0" {
		t.Errorf("bundle phase %s with tag %q, want Synced with 1.0.0 (%s)", got.Status.Phase, got.Status.LastAppliedTag, got.Status.LastErrorMessage)
	}
}

// selfSignedCert is a CA certificate for ip that is its own serving certificate, and its PEM.
func selfSignedCert(t *testing.T, ip net.IP) (tls.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "werf contract test registry"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{ip}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// driftCheck runs the drift-check Job the operator makes (`werf bundle plan … --exit-code`) on the
// real node, created directly: the operator would make it a drift interval (at least a minute)
// after a deploy. Without the bundle's labels, so that no operator takes it for one of its own.
// The contract image accepts the plan arguments and finds no change, like werf: exit 0.
func (w *realNodeWorld) driftCheck(t *testing.T) {
	b := &werfv1.WerfBundle{ObjectMeta: metav1.ObjectMeta{Name: "planned", Namespace: w.ns},
		Spec: werfv1.WerfBundleSpec{Registry: werfv1.RegistrySpec{URL: w.reg.Repository("demo/app"), Insecure: true},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"}}}
	job := werfbundle.CheckJobForTest(b, ContractTestImage, w.jobEnv, "1.0.0")
	for _, labels := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
		delete(labels, werfbundle.LabelBundleName)
		delete(labels, werfbundle.LabelBundleNamespace)
	}
	createObject(w.ctx, t, w.cp.Client, job)
	realPoll(w.ctx, t, "the check Job finished", func() (bool, string) {
		if err := w.cp.Client.Get(w.ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err.Error()
		}
		return jobDone(job), describeJob(w, job)
	})
	pod := w.podsOf(t, job)[0]
	var report struct{ Command, Tag string }
	_ = json.Unmarshal([]byte(terminationMessage(&pod)), &report)
	if !jobSucceeded(job) || report.Command != "bundle plan" || report.Tag != "1.0.0" || pod.Spec.NodeName != w.node.Name {
		t.Errorf("the check Job on %q: %s; report %+v\n%s", pod.Spec.NodeName, describeJob(w, job), report, terminationMessage(&pod))
	}
	t.Logf("check Job start → end (whole seconds): %s", jobRunTime(job))
}

// startWithoutRights creates a bundle in a namespace whose werf ServiceAccount has no role.
func (w *realNodeWorld) startWithoutRights(t *testing.T) started {
	ns := w.ns + "-no-rights"
	w.setUpNamespace(t, ns, false)
	return w.create(t, &werfv1.WerfBundle{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: werfv1.WerfBundleSpec{Registry: werfv1.RegistrySpec{URL: w.reg.Repository("demo/app"), Insecure: true},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"}}})
}

// jobWithoutRights: the contract image finds that werf could not store its release and names
// it; the bundle is Failed with that line.
func (w *realNodeWorld) jobWithoutRights(t *testing.T, s started) {
	ns := s.bundle.Namespace
	b, job, _ := w.finished(t, s)
	if jobSucceeded(job) {
		t.Fatalf("the Job succeeded, want a failure")
	}
	got := w.waitBundle(t, b, func(b *werfv1.WerfBundle) bool { return b.Status.LastFinishedJob == job.Name })
	msg := got.Status.LastErrorMessage
	lastLine := msg[strings.LastIndexByte(msg, '\n')+1:]
	if got.Status.Phase != werfv1.PhaseFailed || lastLine != "Error: werf contract test: ServiceAccount permissions: "+
		"the ServiceAccount may not create Secrets in "+ns+", where werf stores its releases" {
		t.Errorf("bundle phase %s; lastErrorMessage does not end with the broken part:\n%s", got.Status.Phase, msg)
	}
}

func (w *realNodeWorld) waitBundle(t *testing.T, b *werfv1.WerfBundle, cond func(*werfv1.WerfBundle) bool) *werfv1.WerfBundle {
	got := &werfv1.WerfBundle{}
	realPoll(w.ctx, t, "the bundle records its Job", func() (bool, string) {
		if err := w.cp.Client.Get(w.ctx, client.ObjectKeyFromObject(b), got); err != nil {
			return false, err.Error()
		}
		return cond(got), string(got.Status.Phase) + ": " + got.Status.LastErrorMessage
	})
	return got
}

// storedLog is the log the operator kept for the bundle's last Job.
func (w *realNodeWorld) storedLog(t *testing.T, b *werfv1.WerfBundle) string {
	var cm corev1.ConfigMap
	if err := w.cp.Client.Get(w.ctx, clientKeyIn(controlplane.OperatorNamespace, b.Status.LastJobLog), &cm); err != nil {
		t.Fatalf("the stored log %q: %v", b.Status.LastJobLog, err)
	}
	return cm.Data["log"]
}

func (w *realNodeWorld) podsOf(t *testing.T, j *batchv1.Job) []corev1.Pod {
	var pods corev1.PodList
	if err := w.cp.Client.List(w.ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("Job %s has no pods", j.Name)
	}
	items := pods.Items
	for i := 1; i < len(items); i++ {
		for k := i; k > 0 && items[k].CreationTimestamp.Before(&items[k-1].CreationTimestamp); k-- {
			items[k], items[k-1] = items[k-1], items[k]
		}
	}
	return items
}

func describeJob(w *realNodeWorld, j *batchv1.Job) string {
	var b strings.Builder
	for _, c := range j.Status.Conditions {
		b.WriteString(string(c.Type) + "=" + string(c.Status) + " " + c.Reason + ": " + c.Message + "; ")
	}
	var pods corev1.PodList
	if err := w.cp.Client.List(w.ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err == nil {
		for _, p := range pods.Items {
			b.WriteString("pod " + p.Name + " on " + p.Spec.NodeName + " " + string(p.Status.Phase) + " ")
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil {
					b.WriteString("waiting " + cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message + " ")
				}
			}
		}
	}
	return b.String()
}

// jobRunTime is from the Job's start to its completion or failure, as the Job controller recorded
// them (whole seconds).
func jobRunTime(j *batchv1.Job) time.Duration {
	if j.Status.StartTime == nil {
		return 0
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Sub(j.Status.StartTime.Time)
		}
	}
	return 0
}

func jobNames(jobs []batchv1.Job) string {
	names := make([]string, 0, len(jobs))
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	return strings.Join(names, ", ")
}

func jobSucceeded(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func terminationMessage(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			return cs.State.Terminated.Message
		}
	}
	return ""
}

func createObject(ctx context.Context, t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(ctx, o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// realPoll polls cond every 250 ms until it holds; on timeout it fails with cond's last word.
func realPoll(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: %s", what, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
