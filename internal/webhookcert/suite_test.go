package webhookcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// env is the package's light control plane (etcd + kube-apiserver), for the tests that run the
// certificate management in a manager against a real API server.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e }) }

// managed is a manager running the certificate management and the webhook server the way the
// operator does outside a cluster: the certificate names localhost and 127.0.0.1.
type managed struct {
	ns, secret, mutating, validating string
	port                             int
	certDir                          string
	srv                              *Server
}

// newManaged creates a namespace and the two webhook configurations (pointed at the server, with
// no caBundle) for one test; each configuration's webhooks match a resource no one creates.
func newManaged(t *testing.T, name string) *managed {
	t.Helper()
	ctx := context.Background()
	_, p, _ := net.SplitHostPort(testenv.FreeAddr(t))
	port, _ := strconv.Atoi(p)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wc-" + name + "-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	m := &managed{ns: ns.Name, secret: "cert", mutating: "m-" + ns.Name, validating: "v-" + ns.Name,
		port: port, certDir: t.TempDir()}
	url := fmt.Sprintf("https://127.0.0.1:%d/hook", port)
	none := admissionregistrationv1.SideEffectClassNone
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"nothing.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}},
	}}
	objs := []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: m.mutating},
			Webhooks: []admissionregistrationv1.MutatingWebhook{
				{Name: "a.nothing.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, Rules: rules,
					SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
				{Name: "b.nothing.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, Rules: rules,
					SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: m.validating},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{
				{Name: "c.nothing.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, Rules: rules,
					SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	return m
}

func (m *managed) options(mirror bool) Options {
	return Options{
		Namespace: m.ns, SecretName: m.secret, DNSNames: []string{"localhost", "127.0.0.1"},
		MutatingWebhookConfiguration: m.mutating, ValidatingWebhookConfiguration: m.validating,
		CertDir: m.certDir, Mirror: mirror,
	}
}

// leaseName is the manager's leader election lease in the test's namespace.
const leaseName = "webhookcert-test"

// holdLease makes another replica the leader, so the issuer (leader only) waits until the lease
// is released; it returns the release.
func (m *managed) holdLease(t *testing.T) (release func()) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: leaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now}}
	if err := env.Client.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := env.Client.Delete(context.Background(), lease); err != nil {
			t.Fatal(err)
		}
	}
}

// start runs a manager (with leader election, whose lease holdLease may hold) with the webhook
// server and the certificate management until the test ends.
func (m *managed) start(t *testing.T, mirror bool) {
	t.Helper()
	m.srv = NewServer(webhook.Options{Host: "127.0.0.1", Port: m.port, CertDir: m.certDir})
	m.srv.Register("/hook", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		WebhookServer:           m.srv,
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		LeaderElection:          true,
		LeaderElectionID:        leaseName,
		LeaderElectionNamespace: m.ns,
		LeaseDuration:           ptr.To(15 * time.Second),
		RenewDeadline:           ptr.To(10 * time.Second),
		RetryPeriod:             ptr.To(time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = mgr.GetWebhookServer() // adds the server to the manager, as registering a webhook with the builder does
	if err := Setup(mgr, m.options(mirror)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// ready is the webhook server's readiness check, as the operator's /readyz runs it.
func (m *managed) ready() error { return m.srv.StartedChecker()(nil) }

// served returns the certificate the server presents on 127.0.0.1.
func (m *managed) served() (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)),
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // verified by the caller against the injected bundles
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// bundles returns the caBundle of every webhook of both configurations.
func (m *managed) bundles(ctx context.Context) ([][]byte, error) {
	mc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	vc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: m.mutating}, mc); err != nil {
		return nil, err
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: m.validating}, vc); err != nil {
		return nil, err
	}
	var out [][]byte
	for _, w := range mc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range vc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out, nil
}

// verifyTrusted checks cert as the API server does on every call: it must chain, for 127.0.0.1,
// to the caBundle of every webhook.
func (m *managed) verifyTrusted(ctx context.Context, cert *x509.Certificate) error {
	bundles, err := m.bundles(ctx)
	if err != nil {
		return err
	}
	for i, b := range bundles {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("webhook %d has no caBundle", i)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
			return fmt.Errorf("webhook %d: %w", i, err)
		}
	}
	return nil
}

// secretPair returns the serving pair and the CA bundle the Secret holds, once it holds them.
func (m *managed) secretPair(ctx context.Context) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: m.secret}, s); err != nil {
		return nil, err
	}
	if len(s.Data[KeyCert]) == 0 || len(s.Data[KeyKey]) == 0 {
		return nil, fmt.Errorf("the Secret holds no serving certificate yet")
	}
	return map[string][]byte{KeyCert: s.Data[KeyCert], KeyKey: s.Data[KeyKey], KeyCA: s.Data[KeyCA]}, nil
}

// writeStale fills the cert dir with a pair from a CA of its own, as a previous control plane's
// run leaves it.
func (m *managed) writeStale(t *testing.T) *keyPair {
	t.Helper()
	old := mustCA(t, time.Now(), 24*time.Hour)
	s := mustServing(t, old, newHosts([]string{"localhost", "127.0.0.1"}), time.Now(), time.Hour)
	if err := writeFiles(m.certDir, map[string][]byte{KeyCert: s.certPEM, KeyKey: s.keyPEM, KeyCA: old.certPEM}); err != nil {
		t.Fatal(err)
	}
	return s
}

func errContains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
