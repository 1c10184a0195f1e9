package controlplane

import (
	"context"
	"fmt"
	"maps"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/slipway-dev/slipway/config"
)

// The operator's identity in a cluster: its ServiceAccount in its namespace.
const (
	OperatorNamespace = "slipway-system"
	OperatorUser      = "system:serviceaccount:slipway-system:slipway-operator"
)

// InstallOperatorIdentity installs what config/ ships around the operator, as a cluster install
// would, and writes a kubeconfig for the operator's user to path:
//
//   - the namespaces of config/manager with their labels (Pod Security levels included), so a pod
//     the shipped namespace would refuse is refused in tests and in dev too;
//   - the generated roles of the given controllers (all when none is given, as for
//     --controllers) and the common role, bound to the operator's user; the bindings of the other
//     controllers' roles are removed, so the user holds exactly those roles;
//   - the ClusterRoles those controllers ship unbound (config.UnboundRoles: Catalyst's
//     slipway-catalyst-deployer), bound to nobody: the controller binds them itself where it needs
//     them, as in a cluster;
//   - with Catalyst, its admission policies and their bindings (InstallAdmissionPolicies).
//
// The user is that of the single-Deployment form (one operator running the given controllers);
// the default install runs one Deployment per controller, each as its own ServiceAccount holding
// the common role and its controller's (docs/operator.md, Identities).
//
// An operator run with the kubeconfig has exactly the permissions the manifests grant, so a
// missing RBAC marker fails in dev and in tests as it would in a cluster. Roles are updated to the
// generated rules; shipped labels are added to a namespace that exists already.
func (cp *ControlPlane) InstallOperatorIdentity(ctx context.Context, path string, controllers ...string) (string, error) {
	namespaces, err := config.Namespaces()
	if err != nil {
		return "", err
	}
	clusterRoles, roles, err := config.Roles(controllers...)
	if err != nil {
		return "", err
	}
	unbound, err := config.UnboundRoles(controllers...)
	if err != nil {
		return "", err
	}
	for _, r := range roles {
		if !slices.ContainsFunc(namespaces, func(ns *corev1.Namespace) bool { return ns.Name == r.Namespace }) {
			namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}})
		}
	}
	for _, want := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		if _, err := controllerutil.CreateOrUpdate(ctx, cp.Client, ns, func() error {
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			maps.Copy(ns.Labels, want.Labels)
			return nil
		}); err != nil {
			return "", fmt.Errorf("installing namespace %s: %w", want.Name, err)
		}
	}

	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: OperatorUser}}
	wanted := map[string]bool{}
	for _, want := range clusterRoles {
		wanted[want.Name] = true
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		if err := apply(ctx, cp.Client, role, func() { role.Rules = want.Rules }); err != nil {
			return "", err
		}
		if err := apply(ctx, cp.Client, binding, func() {
			binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: want.Name}
			binding.Subjects = subjects
		}); err != nil {
			return "", err
		}
	}
	for _, want := range roles {
		wanted[want.Namespace+"/"+want.Name] = true
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		if err := apply(ctx, cp.Client, role, func() { role.Rules = want.Rules }); err != nil {
			return "", err
		}
		if err := apply(ctx, cp.Client, binding, func() {
			binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: want.Name}
			binding.Subjects = subjects
		}); err != nil {
			return "", err
		}
	}
	for _, want := range unbound {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		if err := apply(ctx, cp.Client, role, func() { role.Rules = want.Rules }); err != nil {
			return "", err
		}
	}
	if err := cp.unbindOthers(ctx, wanted); err != nil {
		return "", err
	}
	if len(controllers) == 0 || slices.Contains(controllers, "catalyst") {
		if err := cp.InstallAdmissionPolicies(ctx); err != nil {
			return "", err
		}
	}
	return cp.UserKubeconfig(path, OperatorUser,
		"system:serviceaccounts", "system:serviceaccounts:"+OperatorNamespace, "system:authenticated")
}

// unbindOthers deletes the bindings of the generated roles not wanted (by name, or
// namespace/name): those of the controllers an earlier call installed and this one does not.
func (cp *ControlPlane) unbindOthers(ctx context.Context, wanted map[string]bool) error {
	allCluster, allRoles, err := config.Roles()
	if err != nil {
		return err
	}
	var stale []client.Object
	for _, r := range allCluster {
		if !wanted[r.Name] {
			stale = append(stale, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name}})
		}
	}
	for _, r := range allRoles {
		if !wanted[r.Namespace+"/"+r.Name] {
			stale = append(stale, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace}})
		}
	}
	for _, o := range stale {
		if err := cp.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

func apply(ctx context.Context, c client.Client, o client.Object, mutate func()) error {
	if _, err := controllerutil.CreateOrUpdate(ctx, c, o, func() error { mutate(); return nil }); err != nil {
		return fmt.Errorf("installing %T %s: %w", o, client.ObjectKeyFromObject(o), err)
	}
	return nil
}

// InstallAdmissionPolicies installs Catalyst's ValidatingAdmissionPolicies and bindings as config/
// ships them (config.AdmissionPolicies), or updates them to it. The API server enforces a policy
// once its informers have seen it and the namespace, about a second later: a test that needs the
// policies probes for a refusal first.
func (cp *ControlPlane) InstallAdmissionPolicies(ctx context.Context) error {
	policies, bindings, err := config.AdmissionPolicies()
	if err != nil {
		return err
	}
	for _, want := range policies {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		if err := apply(ctx, cp.Client, p, func() { p.Labels, p.Spec = want.Labels, want.Spec }); err != nil {
			return err
		}
	}
	for _, want := range bindings {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		if err := apply(ctx, cp.Client, b, func() { b.Labels, b.Spec = want.Labels, want.Spec }); err != nil {
			return err
		}
	}
	return nil
}
