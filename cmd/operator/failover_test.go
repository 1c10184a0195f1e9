//go:build e2e

package main_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
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
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
	"github.com/slipway-dev/slipway/internal/webhookcert"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e }) }

// Leader election timings of the test replicas: short, so that a takeover after a crash (which
// leaves the Lease held until it expires) happens within seconds.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = time.Second
	resyncPeriod  = 30 * time.Second
	leaseName     = "slipway-operator.slipway.dev"
)

// replica is one operator process running the WebApp controller with leader election.
type replica struct {
	*operatorproc.Process
}

func startReplica(t *testing.T, name, kubeconfig string) *replica {
	t.Helper()
	return &replica{operatorproc.Start(t, operatorproc.Binary(t), operatorproc.Options{
		Name:       name,
		Kubeconfig: kubeconfig,
		Args: []string{
			"--namespace=" + controlplane.OperatorNamespace,
			"--controllers=webapp",
			"--leader-elect=true",
			"--leader-election-lease-duration=" + leaseDuration.String(),
			"--leader-election-renew-deadline=" + renewDeadline.String(),
			"--leader-election-retry-period=" + retryPeriod.String(),
			"--webhook-cert-mirror=true",
			"--webhook-cert-dns-names=localhost",
		},
	})}
}

// leading reads the replica's leader_election_master_status gauge; false when it does not answer.
func (r *replica) leading(ctx context.Context) bool {
	v, err := r.MetricSum(ctx, "leader_election_master_status", map[string]string{"name": leaseName})
	return err == nil && v == 1
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
	_, port, _ := net.SplitHostPort(r.WebhookAddr)
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
			if r.leading(ctx) {
				if leader != nil {
					return false, fmt.Errorf("%s and %s both lead", leader.Name, r.Name)
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
	// The binary first: a cold build takes minutes, which must not count against the deadline.
	operatorproc.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := env.Client
	kubeconfig, err := env.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	a := startReplica(t, "replica-a", kubeconfig)
	b := startReplica(t, "replica-b", kubeconfig)
	first := waitLeader(ctx, t, a, b)
	second := a
	if first == a {
		second = b
	}

	// Webhooks are served by every replica, the follower included.
	// Ready means the webhook server serves a certificate.
	a.WaitReady(ctx, t)
	b.WaitReady(ctx, t)
	for _, r := range []*replica{first, second} {
		bad := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "no-tag", Namespace: "default"}, Spec: webappv1.WebAppSpec{Image: "nginx"}}
		resp, err := r.review(ctx, c, bad)
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "tag or a digest") {
			t.Errorf("%s admitted an image without a tag: %+v", r.Name, resp)
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
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
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
	if !second.leading(ctx) {
		t.Errorf("%s does not report itself leader after the takeover", second.Name)
	}

	// Graceful shutdown: SIGTERM ends the process with status 0 and releases the Lease at once.
	if err := second.Stop(ctx); err != nil {
		t.Errorf("%s after SIGTERM: %v", second.Name, err)
	}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: controlplane.OperatorNamespace, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" {
		t.Errorf("the Lease is still held by %q after a graceful shutdown", h)
	}
}
