//go:build e2e

package main_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// metricsReader is the ClusterRole scrapers are bound to, as config/ ships it.
const metricsReader = "../../config/rbac/metrics_reader.yaml"

// TestOperator_SecureMetricsNeedAServiceAccountAllowedToRead runs the operator binary with secure
// metrics (--metrics-secure, the default; the test harness otherwise scrapes over plain HTTP),
// under its RBAC identity (the common role: TokenReview and SubjectAccessReview). A scraper with
// the token of a ServiceAccount bound to slipway-metrics-reader (config/rbac/metrics_reader.yaml)
// reads the metrics over HTTPS; without a token it is refused with 401, and with the token of a
// ServiceAccount without that binding with 403.
func TestOperator_SecureMetricsNeedAServiceAccountAllowedToRead(t *testing.T) {
	operatorproc.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := env.Client
	kubeconfig, err := env.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"), "werfbundle")
	if err != nil {
		t.Fatal(err)
	}

	// The shipped ClusterRole, bound to one ServiceAccount; another has no binding.
	data, err := os.ReadFile(metricsReader)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("%s: %v", metricsReader, err)
	}
	const ns = "monitoring"
	for _, o := range []client.Object{
		role,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nosy", Namespace: ns}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-slipway-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}},
		},
	} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		t.Helper()
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a token for %s: %v", sa, err)
		}
		return tr.Status.Token
	}

	p := operatorproc.Start(t, operatorproc.Binary(t), operatorproc.Options{
		Kubeconfig: kubeconfig,
		// After the harness's --metrics-secure=false: the last value counts.
		Args: []string{"--namespace=" + controlplane.OperatorNamespace, "--controllers=werfbundle", "--metrics-secure=true"},
	})
	p.WaitReady(ctx, t)

	// The certificate is the one the operator made for itself; what is tested here is who may
	// read, not the certificate.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+p.MetricsAddr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}

	// The metrics server listens once it has made its certificate and set up its authentication,
	// which readiness does not wait for.
	testenv.Eventually(ctx, t, "the metrics endpoint answers", func() (bool, error) {
		_, _, err := scrape("")
		return err == nil, err
	})

	// Plain HTTP is not served.
	if resp, err := http.Get("http://" + p.MetricsAddr + "/metrics"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("metrics answered 200 over plain HTTP")
		}
	}

	for _, tt := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without the metrics-reader role", token("nosy"), http.StatusForbidden},
	} {
		status, body, err := scrape(tt.token)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if status != tt.want {
			t.Errorf("%s: HTTP %d, want %d (%s)", tt.name, status, tt.want, strings.TrimSpace(body[:min(len(body), 200)]))
		}
	}

	// A token the API server does not know is refused too; controller-runtime's filter answers 500
	// ("Authentication failed"), not 401, because the TokenReview reports it with an error.
	if status, body, err := scrape("not-a-token"); err != nil || status == http.StatusOK {
		t.Errorf("an invalid token: HTTP %d (%v), want a refusal (%s)", status, err, strings.TrimSpace(body[:min(len(body), 200)]))
	}

	// Allowed: the metrics, the controller's among them once it runs (after its election).
	allowed := token("prometheus")
	testenv.Eventually(ctx, t, "the bound ServiceAccount reads the werfbundle controller's metrics", func() (bool, error) {
		status, body, err := scrape(allowed)
		if err != nil {
			return false, err
		}
		if status != http.StatusOK {
			t.Fatalf("a ServiceAccount bound to slipway-metrics-reader: HTTP %d, want 200 (%s)", status, strings.TrimSpace(body[:min(len(body), 200)]))
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("the metrics do not parse: %v", err)
		}
		return operatorproc.Sum(families, "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": "werfbundle"}) == 8, nil
	})
}
