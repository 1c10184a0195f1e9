//go:build e2e

package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/webhookcert"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e }) }

// buildOperator builds this command into the test's temporary directory.
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "operator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	return bin
}

// Leader election timings of the test replicas: short, so that a takeover after a crash (which
// leaves the Lease held until it expires) happens within seconds.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = time.Second
	resyncPeriod  = 30 * time.Second
	leaseName     = "slipway-operator.slipway.dev"
)

// replica is one operator process.
type replica struct {
	name    string
	cmd     *exec.Cmd
	metrics string
	probe   string
	webhook string
	exited  chan struct{}
	err     error
}

func startReplica(t *testing.T, bin, name, kubeconfig string) *replica {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, metrics: testenv.FreeAddr(t), probe: testenv.FreeAddr(t), webhook: testenv.FreeAddr(t), exited: make(chan struct{})}
	r.cmd = exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--namespace="+controlplane.OperatorNamespace,
		"--controllers=webapp",
		"--leader-elect=true",
		"--leader-election-lease-duration="+leaseDuration.String(),
		"--leader-election-renew-deadline="+renewDeadline.String(),
		"--leader-election-retry-period="+retryPeriod.String(),
		"--metrics-bind-address="+r.metrics,
		"--metrics-secure=false",
		"--health-probe-bind-address="+r.probe,
		"--webhook-port="+strings.Split(r.webhook, ":")[1],
		"--webhook-cert-dir="+t.TempDir(),
		"--webhook-cert-mirror=true",
		"--webhook-cert-dns-names=localhost",
	)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); _ = logf.Close(); close(r.exited) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", name, data)
		}
	})
	return r
}

// leading reads the replica's leader_election_master_status gauge; false when it does not answer.
func (r *replica) leading() bool {
	resp, err := http.Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.Contains(line, `name="`+leaseName+`"`) {
			return strings.HasSuffix(line, " 1")
		}
	}
	return false
}

// ready reports whether the replica's /readyz answers 200 (its webhook server serves a
// certificate).
func (r *replica) ready() bool {
	resp, err := http.Get("http://" + r.probe + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// review sends an AdmissionReview for app to the replica's validating webhook, trusting only the
// CA the operator published in its Secret.
func (r *replica) review(ctx context.Context, c client.Client, app *webappv1.WebApp) (*admissionv1.AdmissionResponse, error) {
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: controlplane.OperatorNamespace, Name: webhookcert.DefaultSecretName}, &secret); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		return nil, fmt.Errorf("no CA in the webhook Secret")
	}
	raw, err := json.Marshal(app)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "failover-review",
			Kind:      metav1.GroupVersionKind{Group: "webapp.slipway.dev", Version: "v1", Kind: "WebApp"},
			Resource:  metav1.GroupVersionResource{Group: "webapp.slipway.dev", Version: "v1", Resource: "webapps"},
			Name:      app.Name,
			Namespace: app.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(r.webhook)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	resp, err := hc.Post("https://127.0.0.1:"+port+"/validate-webapp-slipway-dev-v1-webapp", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Response == nil {
		return nil, fmt.Errorf("no response in the AdmissionReview (HTTP %d)", resp.StatusCode)
	}
	return out.Response, nil
}

func waitLeader(ctx context.Context, t *testing.T, replicas ...*replica) *replica {
	t.Helper()
	var leader *replica
	testenv.Eventually(ctx, t, "one replica leads", func() (bool, error) {
		leader = nil
		for _, r := range replicas {
			if r.leading() {
				if leader != nil {
					return false, fmt.Errorf("%s and %s both lead", leader.name, r.name)
				}
				leader = r
			}
		}
		return leader != nil, nil
	})
	return leader
}

func deploymentImage(ctx context.Context, c client.Client, key client.ObjectKey) string {
	var d appsv1.Deployment
	if err := c.Get(ctx, key, &d); err != nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// TestOperator_LeaderFailover runs two operator processes under the operator's RBAC identity:
// both serve the admission webhooks; exactly one leads and reconciles; killed with SIGKILL (no Lease release), the other takes over
// and reconciles a change made after the crash within the lease duration plus one resync; a
// SIGTERM then stops the new leader cleanly, releasing the Lease.
func TestOperator_LeaderFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := env.Client
	kubeconfig, err := env.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildOperator(t)
	a := startReplica(t, bin, "replica-a", kubeconfig)
	b := startReplica(t, bin, "replica-b", kubeconfig)
	first := waitLeader(ctx, t, a, b)
	second := a
	if first == a {
		second = b
	}

	// Webhooks are served by every replica, the follower included.
	testenv.Eventually(ctx, t, "both replicas are ready", func() (bool, error) { return a.ready() && b.ready(), nil })
	for _, r := range []*replica{first, second} {
		bad := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "no-tag", Namespace: "default"}, Spec: webappv1.WebAppSpec{Image: "nginx"}}
		resp, err := r.review(ctx, c, bad)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "tag or a digest") {
			t.Errorf("%s admitted an image without a tag: %+v", r.name, resp)
		}
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "failover"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	app := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
		Spec:       webappv1.WebAppSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](2), Port: 80},
	}
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(app)
	testenv.Eventually(ctx, t, "the leader creates the Deployment", func() (bool, error) {
		return deploymentImage(ctx, c, key) == "nginx:1.25", nil
	})

	// A crash: the Lease stays held by the dead process until it expires.
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	crashed := time.Now()
	if err := c.Get(ctx, key, app); err != nil {
		t.Fatal(err)
	}
	app.Spec.Image = "nginx:1.27"
	if err := c.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	deadline, cancelDeadline := context.WithDeadline(ctx, crashed.Add(leaseDuration+resyncPeriod))
	defer cancelDeadline()
	testenv.Eventually(deadline, t, "the surviving replica reconciles the change within the lease duration and one resync", func() (bool, error) {
		return deploymentImage(ctx, c, key) == "nginx:1.27", nil
	})
	if !second.leading() {
		t.Errorf("%s does not report itself leader after the takeover", second.name)
	}

	// Graceful shutdown: SIGTERM ends the process with status 0 and releases the Lease at once.
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.exited:
		if second.err != nil {
			t.Errorf("%s exited with %v after SIGTERM", second.name, second.err)
		}
	case <-ctx.Done():
		t.Fatalf("%s did not stop after SIGTERM", second.name)
	}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: controlplane.OperatorNamespace, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" {
		t.Errorf("the Lease is still held by %q after a graceful shutdown", h)
	}
}
