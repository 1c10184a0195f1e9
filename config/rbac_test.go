package config_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// access is one request the operator's user may or may not make.
type access struct {
	verb, group, resource, namespace, name string
	allowed                                bool
}

func (a access) String() string {
	allowed := "denied"
	if a.allowed {
		allowed = "allowed"
	}
	return fmt.Sprintf("%s %s.%s %s/%s %s", a.verb, a.resource, a.group, a.namespace, a.name, allowed)
}

func allow(verb, group, resource, ns string) access {
	return access{verb: verb, group: group, resource: resource, namespace: ns, allowed: true}
}

func deny(verb, group, resource, ns string) access {
	return access{verb: verb, group: group, resource: resource, namespace: ns}
}

// TestRBAC_OperatorHoldsOnlyTheRolesOfItsControllers installs the generated RBAC for one set of
// controllers after another on one control plane (InstallOperatorIdentity, the test harness's
// single identity) and asks the API server's authorizer what the operator's user may do: what each
// controller needs, and nothing of the other controllers' rules. Before the roles were split, one ClusterRole gave every install every rule (an operator
// running only WebApp could read every Secret and create Jobs in every namespace).
func TestRBAC_OperatorHoldsOnlyTheRolesOfItsControllers(t *testing.T) {
	env := testenv.New(t, testenv.Light)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns, sys = "team-a", controlplane.OperatorNamespace

	// Whatever the controllers: leader election and shard membership in the operator's namespace
	// only (a shard deletes its own Lease on a clean stop), Events, metrics authorization.
	common := []access{
		allow("update", "coordination.k8s.io", "leases", sys),
		allow("delete", "coordination.k8s.io", "leases", sys),
		deny("update", "coordination.k8s.io", "leases", "kube-system"),
		deny("delete", "coordination.k8s.io", "leases", "kube-system"),
		allow("create", "", "events", ns),
		allow("create", "authorization.k8s.io", "subjectaccessreviews", ""),
	}
	// The webhook certificate and configurations are WebApp's, the one system with webhooks.
	webhookConfig := access{verb: "patch", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations",
		name: "slipway-mutating-webhook-configuration"}
	for _, tc := range []struct {
		controllers []string
		want        []access
	}{{
		controllers: []string{"webapp"},
		want: []access{
			allow("create", "apps", "deployments", ns),
			allow("patch", "apps", "deployments", ns),
			allow("patch", "webapp.slipway.dev", "webapps/status", ns),
			{verb: "update", resource: "secrets", namespace: sys, name: "slipway-webhook-cert", allowed: true},
			{verb: webhookConfig.verb, group: webhookConfig.group, resource: webhookConfig.resource, name: webhookConfig.name, allowed: true},
			// Server-side apply and merge patches: no update, no delete.
			deny("update", "apps", "deployments", ns),
			deny("update", "", "services", ns),
			deny("update", "webapp.slipway.dev", "webapps/status", ns),
			// Only its own webhook certificate: no other Secret, anywhere.
			deny("get", "", "secrets", ns),
			deny("list", "", "secrets", ""),
			{verb: "get", resource: "secrets", namespace: sys, name: "another-secret"},
			deny("create", "", "secrets", "kube-system"),
			deny("create", "batch", "jobs", ns),
			deny("create", "", "namespaces", ""),
			deny("delete", "apps", "deployments", ns),
			deny("get", "werf.io", "werfbundles", ns),
			deny("create", "", "configmaps", sys),
		},
	}, {
		controllers: []string{"werfbundle"},
		want: []access{
			allow("create", "batch", "jobs", ns),
			allow("update", "werf.io", "werfbundles/status", ns),
			allow("create", "", "configmaps", sys),
			deny("create", "", "configmaps", ns),
			deny("create", "", "namespaces", ""),
			deny("delete", "", "namespaces", ""),
			deny("create", "apps", "deployments", ns),
			deny("patch", "", "serviceaccounts", ns),
			deny("create", "networking.k8s.io", "ingresses", ns),
			deny("patch", "webapp.slipway.dev", "webapps/status", ns),
			deny("list", "catalyst.catalyst.dev", "projects", ""),
			webhookConfig,
		},
	}, {
		controllers: []string{"catalyst"},
		want: []access{
			allow("create", "", "namespaces", ""),
			allow("update", "catalyst.catalyst.dev", "environments/status", ns),
			deny("update", "werf.io", "werfbundles/status", ns),
			deny("patch", "webapp.slipway.dev", "webapps/status", ns),
			deny("get", "werf.io", "werfbundles", ns),
			webhookConfig,
			// What an environment deploys is deployed as its deployer, a ServiceAccount name of
			// the deployer namespace bound to slipway-catalyst-deployer; the operator may bind
			// that one role and impersonate the ServiceAccounts of that one namespace, no other.
			deny("create", "apps", "deployments", ns),
			{verb: "impersonate", resource: "serviceaccounts", namespace: "slipway-catalyst-deployers", name: ns, allowed: true},
			{verb: "impersonate", resource: "serviceaccounts", namespace: "slipway-catalyst-deployers", name: "any-environment", allowed: true},
			{verb: "impersonate", resource: "serviceaccounts", namespace: ns, name: "catalyst-deployer"},
			{verb: "impersonate", resource: "serviceaccounts", namespace: ns, name: "default"},
			{verb: "impersonate", resource: "serviceaccounts", namespace: "kube-system", name: "namespace-controller"},
			{verb: "impersonate", resource: "serviceaccounts", namespace: "slipway-builds", name: "default"},
			{verb: "impersonate", resource: "users", name: "catalyst:deployer:" + ns},
			{verb: "impersonate", resource: "groups", name: "system:masters"},
			{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "slipway-catalyst-deployer", allowed: true},
			{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"},
			// Build Jobs, their pods and logs: in the build namespace alone. A Job elsewhere would
			// run a pod as any ServiceAccount of that namespace.
			allow("create", "batch", "jobs", "slipway-builds"),
			allow("get", "", "pods/log", "slipway-builds"),
			deny("create", "batch", "jobs", ns),
			deny("create", "batch", "jobs", "kube-system"),
			deny("list", "batch", "jobs", ""),
			deny("list", "", "pods", ns),
			deny("get", "", "pods/log", ns),
			deny("list", "", "events", ns),
			deny("update", "", "secrets", ns),
		},
	}, {
		controllers: nil, // all of them, as --controllers' default
		want: []access{
			allow("create", "apps", "deployments", ns),
			allow("update", "werf.io", "werfbundles/status", ns),
			allow("create", "", "namespaces", ""),
			allow("create", "", "configmaps", sys),
		},
	}} {
		t.Run(fmt.Sprint(tc.controllers), func(t *testing.T) {
			if _, err := env.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"), tc.controllers...); err != nil {
				t.Fatal(err)
			}
			// Catalyst's deployer ClusterRole is installed with it, bound to nobody.
			if len(tc.controllers) == 0 || slices.Contains(tc.controllers, "catalyst") {
				var role rbacv1.ClusterRole
				if err := env.Client.Get(ctx, client.ObjectKey{Name: "slipway-catalyst-deployer"}, &role); err != nil || len(role.Rules) == 0 {
					t.Errorf("ClusterRole slipway-catalyst-deployer: %v, %d rules", err, len(role.Rules))
				}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: "slipway-catalyst-deployer"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
					t.Errorf("a ClusterRoleBinding slipway-catalyst-deployer: %v, want none", err)
				}
			}
			for _, a := range append(append([]access{}, common...), tc.want...) {
				if got := allowed(ctx, t, env.Client, a); got != a.allowed {
					t.Errorf("want %s, got allowed=%t", a, got)
				}
			}
		})
	}
}

// TestRBAC_InstallsTheShippedNamespaces checks that the operator's namespace is created with the
// Pod Security level config/manager ships: a pod it would refuse in a cluster is refused in tests.
func TestRBAC_InstallsTheShippedNamespaces(t *testing.T) {
	env := testenv.New(t, testenv.Light)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := env.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig")); err != nil {
		t.Fatal(err)
	}
	var ns corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: controlplane.OperatorNamespace}, &ns); err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("namespace %s: want Pod Security enforce=restricted, got %q", ns.Name, got)
	}
	root := &corev1.Pod{}
	root.Name, root.Namespace = "root", controlplane.OperatorNamespace
	root.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox:1.36"}}
	err := env.Client.Create(ctx, root)
	if err == nil {
		t.Fatal("a pod without the restricted security context was admitted into the operator namespace")
	}
	t.Logf("refused as expected: %v", err)
}

func allowed(ctx context.Context, t *testing.T, c client.Client, a access) bool {
	t.Helper()
	resource, sub, _ := strings.Cut(a.resource, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   controlplane.OperatorUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + controlplane.OperatorNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: resource, Subresource: sub, Namespace: a.namespace, Name: a.name,
		},
	}}
	if err := c.Create(ctx, sar); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	return sar.Status.Allowed
}
