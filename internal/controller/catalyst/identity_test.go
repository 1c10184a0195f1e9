//go:build e2e

package catalyst_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// deployerNS is the deployer namespace of the tests' operator (the default).
const deployerNS = catalyst.DefaultDeployerNamespace

// deployerUser is the user an environment's deploy acts as.
func deployerUser(ns string) string { return catalyst.DeployerUser(deployerNS, ns) }

// saUser is the user name of the ServiceAccount name of namespace ns, and its groups.
func saUser(ns, name string) (string, []string) {
	return "system:serviceaccount:" + ns + ":" + name, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

// TestIdentity_NothingInTheEnvironmentNamespaceHoldsTheDeployer attacks a Ready environment from
// inside its namespace, as the most powerful identity that can exist there (a ServiceAccount bound
// to admin, with a token of its own): the deployer's rights are bound to a ServiceAccount name of
// the deployer namespace that no object carries, so a token Secret for the old deployer name gets
// no token, a pod cannot run as it (and the name, created again, holds nothing), no TokenRequest
// for the deployer is granted to that identity nor to the deployer itself, the deployer may
// impersonate nobody, and the operator may impersonate the deployer namespace's ServiceAccounts
// alone. (Before, the deployer was the ServiceAccount catalyst-deployer of the namespace: a pod
// could run as it and a token Secret for it gave a token that never expires.)
func TestIdentity_NothingInTheEnvironmentNamespaceHoldsTheDeployer(t *testing.T) {
	f := newFixture(t)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"))
	p.Spec.Registry = nil
	// The most a preview namespace can hold: a Project whose previews may bind admin.
	p.Spec.Deployment.AllowedClusterRoles = []string{"admin"}
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	ns := f.waitReady(f.createEnvironment(f.environment("who", f.head))).Status.Namespace
	f.checkDeployerBinding(ns)
	f.absent(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: catalyst.LegacyDeployerServiceAccount, Namespace: ns}}, "a ServiceAccount catalyst-deployer in the environment namespace")
	f.absent(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: deployerNS}}, "the deployer's ServiceAccount object")
	// The deployer holds its rights (what follows is refused for want of them, not of a binding).
	deployer, deployerGroups := saUser(deployerNS, ns)
	if !f.allowed(deployer, deployerGroups, authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "deployments", Namespace: ns}) {
		t.Errorf("%s may not create Deployments in %s", deployer, ns)
	}
	ownerCfg := f.namespaceOwner(ns)
	owner := kubernetes.NewForConfigOrDie(ownerCfg)

	f.checkNoTokenSecret(owner, ns)
	f.checkNoPodAsDeployer(owner, ns)
	f.checkNoDeployerToken(ownerCfg, ns)
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: "default"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: catalyst.LegacyDeployerServiceAccount},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: deployerNS, Name: "another-environment"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "kube-system", Name: "namespace-controller"},
		{Verb: "impersonate", Resource: "users", Name: controlplane.OperatorUser},
		{Verb: "impersonate", Resource: "groups", Name: "system:masters"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: "any"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: "scopes"},
	} {
		if f.allowed(deployer, deployerGroups, a) {
			t.Errorf("the deployer may %s %s/%s %s in %q", a.Verb, a.Resource, a.Subresource, a.Name, a.Namespace)
		}
	}
	// The operator impersonates the ServiceAccounts of the deployer namespace, and no other.
	for _, a := range []struct {
		ns, name string
		allowed  bool
	}{{deployerNS, ns, true}, {deployerNS, "any-environment", true}, {ns, catalyst.LegacyDeployerServiceAccount, false},
		{ns, "default", false}, {ns, "owner", false}, {"kube-system", "namespace-controller", false}, {buildNS, "default", false}} {
		attrs := authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: a.ns, Name: a.name}
		if got := f.allowed(controlplane.OperatorUser, nil, attrs); got != a.allowed {
			t.Errorf("the operator may impersonate ServiceAccount %s/%s: %t, want %t", a.ns, a.name, got, a.allowed)
		}
	}
}

// checkDeployerBinding checks that the RoleBinding catalyst-deployer of ns binds the deployer,
// the ServiceAccount name ns of the deployer namespace, to the default ClusterRole.
func (f *fixture) checkDeployerBinding(ns string) {
	f.t.Helper()
	var rb rbacv1.RoleBinding
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: catalyst.DeployerRoleBinding}, &rb); err != nil {
		f.t.Fatal(err)
	}
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: deployerNS, Name: ns}}
	if rb.RoleRef.Name != catalyst.DefaultDeployerClusterRole || !slices.Equal(rb.Subjects, want) {
		f.t.Errorf("the deployer's RoleBinding binds %+v to %s, want %+v to %s", rb.Subjects, rb.RoleRef.Name, want, catalyst.DefaultDeployerClusterRole)
	}
}

// namespaceOwner makes the most powerful identity that can exist in ns: a ServiceAccount bound
// to admin there. It returns a client configuration with a token of its own (TokenRequest).
func (f *fixture) namespaceOwner(ns string) *rest.Config {
	f.t.Helper()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "owner-is-admin", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "owner", Namespace: ns}}},
	} {
		f.create(o)
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(f.ctx, "owner", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	user, groups := saUser(ns, "owner")
	testenv.Eventually(f.ctx, f.t, "the owner bound to admin", func() (bool, error) {
		return f.allowed(user, groups, authorizationv1.ResourceAttributes{Verb: "create", Resource: "secrets", Namespace: ns}), nil
	})
	return cfg
}

// allowed asks the API server whether user (of groups) may do what attrs say.
func (f *fixture) allowed(user string, groups []string, attrs authorizationv1.ResourceAttributes) bool {
	f.t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
	if err := f.c.Create(f.ctx, sar); err != nil {
		f.t.Fatal(err)
	}
	return sar.Status.Allowed
}

// tokenSecret is a kubernetes.io/service-account-token Secret for the ServiceAccount sa of ns.
func tokenSecret(name, ns, sa string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type: corev1.SecretTypeServiceAccountToken}
}

// checkNoTokenSecret: a token Secret for the old deployer name gets no token: the preview
// admission policies refuse it, and were they absent the controller manager would delete it (no
// such ServiceAccount; the control test shows it fills one whose ServiceAccount exists). One for
// the deployer may not be written in the deployer namespace.
func (f *fixture) checkNoTokenSecret(owner kubernetes.Interface, ns string) {
	f.t.Helper()
	f.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "control", Namespace: f.team}})
	f.create(tokenSecret("control-token", f.team, "control"))
	testenv.Eventually(f.ctx, f.t, "the controller manager fills a token Secret", func() (bool, error) {
		var s corev1.Secret
		err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.team, Name: "control-token"}, &s)
		return len(s.Data[corev1.ServiceAccountTokenKey]) > 0, err
	})
	s := tokenSecret("deployer-token", ns, catalyst.LegacyDeployerServiceAccount)
	if _, err := owner.CoreV1().Secrets(ns).Create(f.ctx, s, metav1.CreateOptions{}); err != nil {
		f.t.Logf("the token Secret for catalyst-deployer is refused: %v", err)
	}
	testenv.Eventually(f.ctx, f.t, "the token Secret for catalyst-deployer deleted by the controller manager", func() (bool, error) {
		got, err := owner.CoreV1().Secrets(ns).Get(f.ctx, s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil && len(got.Data[corev1.ServiceAccountTokenKey]) > 0 {
			f.t.Errorf("a token Secret for %s/%s got a token", ns, catalyst.LegacyDeployerServiceAccount)
			return true, nil
		}
		return false, err
	})
	_, err := owner.CoreV1().Secrets(deployerNS).Create(f.ctx, tokenSecret("deployer-token", deployerNS, ns), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		f.t.Errorf("a token Secret for the deployer in %s: %v, want forbidden", deployerNS, err)
	}
}

// checkNoPodAsDeployer: a pod naming serviceAccountName catalyst-deployer finds no such
// ServiceAccount (a cluster's ServiceAccount admission refuses it; this API server runs without
// that plugin, as envtest's do, and admits it, so the test checks what matters: the name holds
// nothing), and the name, created again by the namespace's admin, holds none of the deployer's
// rights.
func (f *fixture) checkNoPodAsDeployer(owner kubernetes.Interface, ns string) {
	f.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "as-deployer", Namespace: ns}, Spec: corev1.PodSpec{
		ServiceAccountName: catalyst.LegacyDeployerServiceAccount,
		SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "kubectl", Image: "registry.k8s.io/kubectl:v1.37.1",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
	}}
	// The preview admission policies refuse it too (rule pod-service-account); any refusal will do.
	if _, err := owner.CoreV1().Pods(ns).Create(f.ctx, pod, metav1.CreateOptions{}); err != nil {
		f.t.Logf("a pod as catalyst-deployer is refused: %v", err)
	}
	f.absent(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: catalyst.LegacyDeployerServiceAccount, Namespace: ns}}, "the ServiceAccount a pod as catalyst-deployer runs as")
	// The admission policies keep the name for the operator (rule operator-object); a cluster
	// without them would let the namespace's admin create it.
	if _, err := owner.CoreV1().ServiceAccounts(ns).Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: catalyst.LegacyDeployerServiceAccount}}, metav1.CreateOptions{}); err != nil {
		f.t.Logf("creating the ServiceAccount catalyst-deployer is refused: %v", err)
	}
	user, groups := saUser(ns, catalyst.LegacyDeployerServiceAccount)
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: "apps", Resource: "deployments", Namespace: ns},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: ns},
		{Verb: "get", Resource: "secrets", Namespace: ns},
	} {
		if f.allowed(user, groups, a) {
			f.t.Errorf("ServiceAccount %s/%s, made again, may %s %s", ns, catalyst.LegacyDeployerServiceAccount, a.Verb, a.Resource)
		}
	}
}

// checkNoDeployerToken: a TokenRequest for the deployer is refused to the namespace's admin and
// to the deployer itself; the admin may not act as the deployer through impersonation either.
func (f *fixture) checkNoDeployerToken(ownerCfg *rest.Config, ns string) {
	f.t.Helper()
	owner := kubernetes.NewForConfigOrDie(ownerCfg)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate.UserName = deployerUser(ns)
	asDeployer, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	for who, cs := range map[string]kubernetes.Interface{"the namespace's admin": owner, "the deployer": asDeployer} {
		if _, err := cs.CoreV1().ServiceAccounts(deployerNS).CreateToken(f.ctx, ns, req, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			f.t.Errorf("%s asks a token for the deployer: %v, want forbidden", who, err)
		}
	}
	ownerCfg = rest.CopyConfig(ownerCfg)
	ownerCfg.Impersonate.UserName = deployerUser(ns)
	ownerAsDeployer, err := kubernetes.NewForConfig(ownerCfg)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := ownerAsDeployer.CoreV1().ConfigMaps(ns).List(f.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		f.t.Errorf("the namespace's admin impersonates the deployer: %v, want forbidden", err)
	}
}

// deleteWatch fails the first delete of a ServiceAccount, as if the operator had died just
// before it, and records whether the deployer's RoleBinding already bound the new deployer at
// each such delete.
type deleteWatch struct {
	client.Client
	reader        client.Reader
	crashed       atomic.Bool
	beforeBinding atomic.Int32
}

func (c *deleteWatch) Delete(ctx context.Context, o client.Object, opts ...client.DeleteOption) error {
	if _, ok := o.(*corev1.ServiceAccount); ok {
		var rb rbacv1.RoleBinding
		err := c.reader.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: catalyst.DeployerRoleBinding}, &rb)
		if err != nil || len(rb.Subjects) != 1 || rb.Subjects[0].Namespace != deployerNS {
			c.beforeBinding.Add(1)
		}
		if c.crashed.CompareAndSwap(false, true) {
			return errCrashed
		}
	}
	return c.Client.Delete(ctx, o, opts...)
}

// TestIdentity_AnEarlierEnvironmentIsRebound: an environment deployed by an earlier version (its
// RoleBinding binds the ServiceAccount catalyst-deployer of its namespace, which the operator
// made) is bound to the deployer at its next reconcile, and that ServiceAccount deleted, after
// the binding (the operator dies before the first delete; the next reconcile finishes it). A
// ServiceAccount catalyst-deployer someone else made is left alone.
func TestIdentity_AnEarlierEnvironmentIsRebound(t *testing.T) {
	f := newFixture(t)
	watch := &deleteWatch{reader: env.Client}
	f.wrap = func(c client.Client) client.Client { watch.Client = c; return watch }
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"))
	p.Spec.Registry = nil
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	var envs [2]*catalystv1alpha1.Environment
	for i, name := range []string{"old", "foreign"} {
		envs[i] = f.waitReady(f.createEnvironment(f.environment(name, f.head)))
	}
	// As the earlier version left them, written as the operator (whom the preview admission
	// policies let write its own objects) with the rights that version had; the second
	// environment's ServiceAccount is not the operator's (no labels of its own).
	earlierCfg := rest.CopyConfig(env.Config)
	earlierCfg.Impersonate = rest.ImpersonationConfig{UserName: controlplane.OperatorUser, Groups: []string{"system:masters"}}
	earlier, err := client.New(earlierCfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range envs {
		ns := e.Status.Namespace
		var rb rbacv1.RoleBinding
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: catalyst.DeployerRoleBinding}, &rb); err != nil {
			t.Fatal(err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: catalyst.LegacyDeployerServiceAccount, Namespace: ns},
			AutomountServiceAccountToken: ptr.To(false)}
		if i == 0 {
			sa.Labels = rb.Labels
		}
		old := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: rb.Name, Namespace: ns, Labels: rb.Labels}, RoleRef: rb.RoleRef,
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: catalyst.LegacyDeployerServiceAccount, Namespace: ns}}}
		for _, err := range []error{earlier.Create(f.ctx, sa), earlier.Delete(f.ctx, &rb), earlier.Create(f.ctx, old)} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	sha := f.commit("a new commit", gittest.Files{"charts/app/README.md": []byte("rebound\n")})
	for _, e := range envs {
		f.updateEnv(e, func(e *catalystv1alpha1.Environment) { e.Spec.Source.CommitSHA = sha })
	}
	for i, e := range envs {
		ns := f.waitReady(e).Status.Namespace
		f.checkDeployerBinding(ns)
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: catalyst.LegacyDeployerServiceAccount, Namespace: ns}}
		if i == 0 {
			f.absent(sa, "the earlier deployer ServiceAccount "+ns+"/"+sa.Name)
		} else if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sa), sa); err != nil {
			t.Errorf("the ServiceAccount catalyst-deployer the operator did not make: %v", err)
		}
	}
	if !watch.crashed.Load() {
		t.Error("the operator deleted no ServiceAccount")
	}
	if n := watch.beforeBinding.Load(); n > 0 {
		t.Errorf("%d ServiceAccount deletes before the RoleBinding bound the deployer", n)
	}
}
