package webapp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/webhook/webapp"
	"github.com/slipway-dev/slipway/internal/webhookcert"
)

const (
	operatorNamespace = controlplane.OperatorNamespace
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}

var (
	identityOnce sync.Once
	identityCfg  *rest.Config
	identityErr  error
)

// operatorConfig is a rest.Config for the operator's user, bound to the generated RBAC only, so
// a missing or too narrow RBAC marker (resourceNames included) fails the tests.
func operatorConfig(t *testing.T) *rest.Config {
	t.Helper()
	identityOnce.Do(func() {
		path, err := env.InstallOperatorIdentity(context.Background(), filepath.Join(env.LogDir, "operator.kubeconfig"))
		if err != nil {
			identityErr = err
			return
		}
		identityCfg, identityErr = clientcmd.BuildConfigFromFlags("", path)
	})
	if identityErr != nil {
		t.Fatal(identityErr)
	}
	return identityCfg
}

// running is an operator manager serving the WebApp webhooks on localhost.
type running struct {
	port    int
	probe   string
	certDir string
	done    chan error
}

// startOperator runs the operator (as a local process would under `make dev`: the Secret mirrored
// into the cert dir, the certificate naming localhost) with the WebApp webhooks, installs the
// generated webhook configurations pointed at https://localhost:<port> with an empty caBundle,
// and waits until the API server calls the webhooks successfully.
func startOperator(t *testing.T, name string, cert operator.WebhookCertOptions) *running {
	t.Helper()
	ctx := context.Background()
	// Every test starts from no Secret, so its own validity settings apply from the first CA.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: webhookcert.DefaultSecretName}}
	if err := env.Client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(testenv.FreeAddr(t))
	port, _ := strconv.Atoi(p)
	r := &running{port: port, probe: testenv.FreeAddr(t), certDir: t.TempDir(), done: make(chan error, 1)}
	r.installConfigurations(t)

	cert.SelfManaged, cert.Mirror = true, true
	cert.SecretName, cert.ServiceName = webhookcert.DefaultSecretName, webhookcert.DefaultServiceName
	cert.DNSNames = []string{"localhost", "127.0.0.1"}
	opts := operator.Options{
		Controllers: []string{"webapp"}, MetricsAddr: "0", ProbeAddr: r.probe,
		WebhookPort: port, WebhookCertDir: r.certDir, WebhookCert: cert,
		LeaderElect: true, LeaderElectionID: "slipway-webhook-" + name, Namespace: operatorNamespace,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		GracefulShutdownTimeout: 10 * time.Second, SkipControllerNameValidation: true,
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	webApps := operator.Controller{Name: "webapp", Setup: func(_ context.Context, mgr ctrl.Manager, _ operator.Options) error {
		return webapp.Setup(mgr, webapp.Options{})
	}}
	mgr, err := operator.NewManager(mgrCtx, operatorConfig(t), scheme.New(), opts, []operator.Controller{webApps})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { r.done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-r.done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	})

	wait, stop := context.WithTimeout(ctx, 3*time.Minute)
	defer stop()
	testenv.Eventually(wait, t, "/readyz answers 200 (certificate in place, server up)", func() (bool, error) {
		resp, err := http.Get("http://" + r.probe + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("status %d", resp.StatusCode)
	})
	testenv.Eventually(wait, t, "the API server calls the webhooks", func() (bool, error) {
		w := webApp("default", "probe")
		err := env.Client.Create(wait, w, client.DryRunAll)
		return err == nil && w.Labels[webapp.NameLabel] == "probe", err
	})
	return r
}

// installConfigurations creates the generated configurations, each webhook pointed at the
// operator on localhost, with no caBundle; they are deleted when the test ends.
func (r *running) installConfigurations(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	m, v, err := config.WebhookConfigurations(fmt.Sprintf("https://localhost:%d", r.port))
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{m, v}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(context.Background(), o); err != nil {
				t.Errorf("deleting %s: %v", o.GetName(), err)
			}
		})
	}
}

// served returns the certificate the webhook server presents on localhost.
func (r *running) served() (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort("localhost", strconv.Itoa(r.port)),
		&tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}) //nolint:gosec // verified below against the injected bundle
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// injected returns the CA bundle of every webhook of both configurations.
func injected(ctx context.Context) ([][]byte, error) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: webhookcert.MutatingWebhookConfiguration}, m); err != nil {
		return nil, err
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: webhookcert.ValidatingWebhookConfiguration}, v); err != nil {
		return nil, err
	}
	var out [][]byte
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out, nil
}

// verifyServed checks that the served certificate chains, for localhost, to the CA bundle of every
// webhook: what the API server does on each call.
func verifyServed(ctx context.Context, r *running) (*x509.Certificate, error) {
	cert, err := r.served()
	if err != nil {
		return nil, err
	}
	// Read after the dial: the bundle is injected before a certificate from a new CA is served.
	bundles, err := injected(ctx)
	if err != nil {
		return nil, err
	}
	for i, b := range bundles {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("webhook %d has no CA bundle", i)
		}
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool}); err != nil {
			return nil, fmt.Errorf("webhook %d: %w", i, err)
		}
	}
	if len(bundles) == 0 {
		return nil, errors.New("no webhooks")
	}
	return cert, nil
}

// namespace creates a namespace for one test, so its WebApp names are its own.
func namespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webapp-webhooks-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
