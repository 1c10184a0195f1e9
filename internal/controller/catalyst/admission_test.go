//go:build e2e

package catalyst_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The world of the admission tests: a preview namespace as the operator makes it (its labels, its
// admission parameters, its guard rails and own objects, all written as the operator's user), and
// the identities that attack it.
const (
	admissionHost   = "pr-1.preview.example.dev"
	allowedGateway  = "gateways/shared"
	allowedStorage  = "standard"
	deployersNS     = catalyst.DefaultDeployerNamespace
	copiedSecret    = "registry-push"
	deployerBinding = "catalyst-deployer"
	previewPriority = "catalyst-admission-low"
)

// admissionProject is the Project whose lists the namespace's parameters carry: an ingress class
// with an allow-list that admits every nginx annotation (the denied ones must stay denied), one
// Gateway, one storage class, the view ClusterRole; nothing else.
func admissionProject() *catalystv1alpha1.Project {
	p := &catalystv1alpha1.Project{}
	p.Spec.Preview.IngressClassName = "nginx"
	p.Spec.Deployment.AllowedIngressAnnotations = []catalystv1alpha1.IngressAnnotations{{IngressClassName: "nginx", Keys: []string{"nginx.ingress.kubernetes.io/*"}}}
	p.Spec.Deployment.AllowedGateways = []catalystv1alpha1.GatewayReference{{Namespace: "gateways", Name: "shared"}}
	p.Spec.Deployment.AllowedStorageClasses = []string{allowedStorage}
	p.Spec.Deployment.AllowedClusterRoles = []string{"view"}
	p.Spec.Deployment.AllowedPriorityClasses = []string{previewPriority}
	return p
}

// identity is one writer in the preview namespace.
type identity struct {
	name string
	c    client.Client
	// strict: RBAC lets this identity write everything in the namespace, so every refusal must
	// be an admission policy's. The others may meet RBAC first (the deployer writes no
	// NetworkPolicy; no namespace admin writes a ResourceQuota): either refusal stops the attack.
	strict bool
}

// admissionWorld is a preview namespace, its attackers and the operator's client.
type admissionWorld struct {
	t         *testing.T
	ctx       context.Context
	ns        string
	operator  client.Client
	attackers []identity
}

var gatewayCRDs sync.Once

// installGatewayAPI installs the Gateway API CRDs (standard channel, testdata/gateway-api: the
// sigs.k8s.io/gateway-api module's config/crd/standard at v1.7.0) and waits until they serve.
func installGatewayAPI(t *testing.T, ctx context.Context) {
	t.Helper()
	var err error
	gatewayCRDs.Do(func() {
		files, _ := filepath.Glob("testdata/gateway-api/*.yaml")
		for _, f := range files {
			data, rerr := os.ReadFile(f)
			if rerr != nil {
				err = rerr
				return
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err = sigsyaml.Unmarshal(data, crd); err != nil {
				return
			}
			if err = env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
				return
			}
			err = nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"HTTPRoute", "GRPCRoute", "Gateway"} {
		testenv.Eventually(ctx, t, "the Gateway API serves "+kind, func() (bool, error) {
			_, err := env.Client.RESTMapper().RESTMapping(schemaGK("gateway.networking.k8s.io", kind))
			return err == nil, nil
		})
	}
}

// newAdmissionWorld makes the namespace, first unlabelled (a cluster administrator binds the
// identities there: a human to admin, a ServiceAccount to admin, a user to cluster-admin, the
// deployer to slipway-catalyst-deployer), then as the operator labels it an environment
// namespace with its parameters and writes the guard rails and its own objects.
func newAdmissionWorld(t *testing.T) *admissionWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	opCfg := operatorConfig(t) // installs the operator's RBAC and the admission policies
	installGatewayAPI(t, ctx)
	w := &admissionWorld{t: t, ctx: ctx, ns: "adm-" + rand.String(6)}
	var err error
	if w.operator, err = client.New(opCfg, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: previewPriority}, Value: 10}
	if err := env.Client.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	w.admin(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}})
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}})
	})
	for _, b := range []struct {
		name    string
		role    string
		subject rbacv1.Subject
	}{
		{"human-admin", "admin", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		{"runner-admin", "admin", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "runner", Namespace: w.ns}},
		{"root-cluster-admin", "cluster-admin", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "root"}},
		{deployerBinding, catalyst.DefaultDeployerClusterRole, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: w.ns, Namespace: deployersNS}},
	} {
		w.admin(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: w.ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role}, Subjects: []rbacv1.Subject{b.subject}})
	}
	w.admin(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: w.ns}})

	// The operator labels the namespace and writes its parameters in one request, as
	// stepNamespace does when it creates one.
	live := &corev1.Namespace{}
	if err := w.operator.Get(ctx, client.ObjectKey{Name: w.ns}, live); err != nil {
		t.Fatal(err)
	}
	base := live.DeepCopy()
	live.Labels = map[string]string{catalyst.LabelEnvironmentNamespace: "team-app", catalyst.LabelManagedBy: catalyst.ManagedByValue,
		"pod-security.kubernetes.io/enforce": "baseline"}
	live.Annotations = catalyst.PolicyParams(admissionProject(), admissionHost, "")
	if err := w.operator.Patch(ctx, live, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	w.operatorObjects()
	w.attackers = w.identities(ctx)
	w.waitEnforced()
	return w
}

// admin creates o as the cluster's administrator.
func (w *admissionWorld) admin(o client.Object) {
	w.t.Helper()
	if err := env.Client.Create(w.ctx, o); err != nil {
		w.t.Fatal(err)
	}
}

// operatorObjects writes, as the operator, what it keeps in every environment namespace: the
// guard rails (quota, limit range, network policy), its Ingress and a copied Secret. The
// deployer's RoleBinding exists already.
func (w *admissionWorld) operatorObjects() {
	w.t.Helper()
	labels := map[string]string{catalyst.LabelManagedBy: catalyst.ManagedByValue}
	for _, o := range []client.Object{
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: catalyst.QuotaName, Namespace: w.ns, Labels: labels},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: mustQuantity("50")}}},
		&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "catalyst-limits", Namespace: w.ns, Labels: labels},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: mustQuantity("2")}}}}},
		defaultDenyPolicy(w.ns),
		validIngress(w.ns, catalyst.IngressName),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: copiedSecret, Namespace: w.ns,
			Labels: map[string]string{catalyst.LabelCopiedSecret: "true"}}, StringData: map[string]string{"password": "push"}},
	} {
		if err := w.operator.Create(w.ctx, o); err != nil {
			w.t.Fatalf("the operator creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// identities are the attackers: a human bound to admin, a ServiceAccount of the namespace bound
// to admin holding a real token (what a pod there can hold at most), a user bound to
// cluster-admin in the namespace, and the deployer (impersonated by the operator in production).
func (w *admissionWorld) identities(ctx context.Context) []identity {
	w.t.Helper()
	dir := w.t.TempDir()
	user := func(name string) client.Client {
		path, err := env.UserKubeconfig(filepath.Join(dir, name+".kubeconfig"), name, "system:authenticated")
		if err != nil {
			w.t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			w.t.Fatal(err)
		}
		return w.client(cfg)
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	tr, err := cs.CoreV1().ServiceAccounts(w.ns).CreateToken(ctx, "runner",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	tokenCfg := rest.AnonymousClientConfig(env.Config)
	tokenCfg.BearerToken = tr.Status.Token
	deployerCfg := rest.CopyConfig(env.Config)
	deployerCfg.Impersonate = rest.ImpersonationConfig{UserName: catalyst.DeployerUser(deployersNS, w.ns),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + deployersNS, "system:authenticated"}}
	return []identity{
		{name: "human admin", c: user("alice")},
		{name: "pod ServiceAccount (admin, TokenRequest token)", c: w.client(tokenCfg)},
		{name: "deployer", c: w.client(deployerCfg)},
		{name: "namespace cluster-admin", c: user("root"), strict: true},
	}
}

func (w *admissionWorld) client(cfg *rest.Config) client.Client {
	w.t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme.New(), Mapper: env.Client.RESTMapper()})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// waitEnforced waits until the API server enforces the policies in the namespace (its policy and
// namespace informers have caught up): a NodePort Service is refused by rule service-type.
func (w *admissionWorld) waitEnforced() {
	w.t.Helper()
	strict := w.attackers[len(w.attackers)-1]
	// Seconds on a loaded machine; without the policies (before this change) it fails here.
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	testenv.Eventually(ctx, w.t, "the admission policies are enforced in "+w.ns, func() (bool, error) {
		err := strict.c.Create(ctx, service(w.ns, "probe", corev1.ServiceTypeNodePort), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "(rule service-type)"), nil
	})
}

// refused checks err is the refusal of the attack: the rule named, or for an identity that is
// not strict RBAC's own refusal. It returns who refused.
func refused(id identity, rule string, err error) (string, error) {
	if err == nil {
		return "", fmt.Errorf("admitted")
	}
	for _, r := range strings.Split(rule, "|") {
		if strings.Contains(err.Error(), "(rule "+r+")") {
			return "rule " + r, nil
		}
	}
	switch {
	// RBAC: the request is not authorized, or the binding grants what its writer does not hold.
	case !id.strict && apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "(rule ") &&
		(strings.Contains(err.Error(), "cannot ") || strings.Contains(err.Error(), "not currently held")):
		return "RBAC", nil
	default:
		return "", fmt.Errorf("refused, but not by rule %s: %w", rule, err)
	}
}

func schemaGK(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
