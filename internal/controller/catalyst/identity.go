package catalyst

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
)

// The environment's own identity: everything the repository's deployment renders and applies
// is done as the ServiceAccount named after the environment namespace in the deployer namespace
// (system:serviceaccount:slipway-catalyst-deployers:<environment namespace>; the deploy engine
// impersonates it), bound by a RoleBinding in the environment namespace only. Nothing runs in
// the deployer namespace and no ServiceAccount object is made there: the API server does not look
// an impersonated ServiceAccount up, so no pod can run as the deployer and no token Secret or
// TokenRequest can be had for it; only the operator, whose impersonation right is a Role in that
// namespace, acts as it.
const (
	// DefaultDeployerNamespace is the deployer namespace (--catalyst-deployer-namespace).
	DefaultDeployerNamespace = "slipway-catalyst-deployers"
	// DeployerRoleBinding binds the deployer to the Project's ClusterRole in the environment
	// namespace.
	DeployerRoleBinding = "catalyst-deployer"
	// LegacyDeployerServiceAccount is the ServiceAccount of the environment namespace that earlier
	// versions deployed as (a pod could run as it). The operator deletes the one it made; the
	// name stays reserved, so a deployment cannot bring it back.
	LegacyDeployerServiceAccount = "catalyst-deployer"
	// DefaultDeployerClusterRole is the ClusterRole of Projects that name none
	// (--catalyst-deployer-cluster-role); the operator's RBAC lets it bind this one only.
	DefaultDeployerClusterRole = "slipway-catalyst-deployer"
)

// deployer is the identity the deploy of environment namespace ns acts as.
func (r *EnvironmentReconciler) deployer(ns string) types.NamespacedName {
	return types.NamespacedName{Namespace: r.DeployerNamespace, Name: ns}
}

// DeployerUser is the user name of the deployer of environment namespace ns, with the deployer
// namespace deployers.
func DeployerUser(deployers, ns string) string {
	return serviceaccount.MakeUsername(deployers, ns)
}

// deployerClusterRole is the ClusterRole the environment's deployer is bound to.
func (r *EnvironmentReconciler) deployerClusterRole(project *catalystv1alpha1.Project) string {
	if cr := project.Spec.Deployment.ClusterRole; cr != "" {
		return cr
	}
	return r.DeployerClusterRole
}

// stepDeployer keeps the RoleBinding of the environment's deployer to the Project's ClusterRole,
// then deletes the ServiceAccount earlier versions deployed as. A RoleBinding's roleRef cannot
// change: when the Project names another ClusterRole, or the binding names another subject (an
// earlier version's), it is deleted and created again. The binding comes first, so a crash in
// between leaves a bound deployer and a stale ServiceAccount the next reconcile deletes.
func (r *EnvironmentReconciler) stepDeployer(ctx context.Context, s *envScope) error {
	if err := r.checkDeployerNamespace(ctx, s); err != nil {
		return err
	}
	role := r.deployerClusterRole(s.project)
	as := r.deployer(s.nsName)
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: DeployerRoleBinding, Namespace: s.nsName, Labels: ownerLabels(s.env, ComponentEnvironment)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: as.Name, Namespace: as.Namespace}}}
	// Read first: a reconcile with nothing to change writes nothing. (ServiceAccounts and
	// RoleBindings are not cached: the operator may not list or watch them.)
	live := &rbacv1.RoleBinding{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rb), live)
	switch {
	case err == nil && live.RoleRef == rb.RoleRef && slices.Equal(live.Subjects, rb.Subjects):
		return r.deleteLegacyDeployer(ctx, s)
	case err == nil:
		if err := r.Delete(ctx, live, client.Preconditions{UID: &live.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting RoleBinding %s/%s to rebind it: %w", s.nsName, DeployerRoleBinding, err)
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading RoleBinding %s/%s: %w", s.nsName, DeployerRoleBinding, err)
	}
	err = r.Create(ctx, rb)
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return r.deleteLegacyDeployer(ctx, s)
	case apierrors.IsForbidden(err):
		s.fail(&failure{condition: catalystv1alpha1.DeploymentReadyCondition, reason: catalystv1alpha1.DeployerNotBoundReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true,
			message: fmt.Sprintf("the operator may not bind ClusterRole %s to the environment's deployer %s: name a ClusterRole it may bind in the Project's spec.deployment.clusterRole, or let it bind this one (RBAC verb bind; docs/catalyst.md, Security model)",
				role, DeployerUser(as.Namespace, as.Name))})
		return errStop
	}
	return fmt.Errorf("creating RoleBinding %s/%s: %w", s.nsName, DeployerRoleBinding, err)
}

// checkDeployerNamespace fails the deploy when the deployer namespace is missing: whoever
// created it could run a pod as an environment's deployer there. (Namespaces are cached.)
func (r *EnvironmentReconciler) checkDeployerNamespace(ctx context.Context, s *envScope) error {
	err := r.Get(ctx, client.ObjectKey{Name: r.DeployerNamespace}, &corev1.Namespace{})
	switch {
	case apierrors.IsNotFound(err):
		s.fail(&failure{condition: catalystv1alpha1.DeploymentReadyCondition, reason: catalystv1alpha1.DeployerNotBoundReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true,
			message: fmt.Sprintf("the deployer namespace %s does not exist; the install creates it (config/manager/catalyst/deployers.yaml), or give the operator another one (--catalyst-deployer-namespace)", r.DeployerNamespace)})
		return errStop
	case err != nil:
		return fmt.Errorf("reading the deployer namespace %s: %w", r.DeployerNamespace, err)
	}
	return nil
}

// deleteLegacyDeployer deletes the ServiceAccount catalyst-deployer an earlier version made in
// the environment namespace (it carries the environment's labels), once the binding no longer
// names it. One that someone else made is left alone: no binding of the operator names it.
func (r *EnvironmentReconciler) deleteLegacyDeployer(ctx context.Context, s *envScope) error {
	sa := &corev1.ServiceAccount{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.nsName, Name: LegacyDeployerServiceAccount}, sa)
	if apierrors.IsNotFound(err) || (err == nil && !hasLabels(sa, ownerLabels(s.env, ComponentEnvironment))) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ServiceAccount %s/%s: %w", s.nsName, LegacyDeployerServiceAccount, err)
	}
	if err := r.Delete(ctx, sa, client.Preconditions{UID: &sa.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the former deployer ServiceAccount %s/%s: %w", s.nsName, LegacyDeployerServiceAccount, err)
	}
	return nil
}

// deployPolicy is the Project's policy for what a deployment may hold.
func deployPolicy(project *catalystv1alpha1.Project) deploy.Policy {
	kinds := func(in []catalystv1alpha1.GroupKind) []schema.GroupKind {
		out := make([]schema.GroupKind, len(in))
		for i, k := range in {
			out[i] = schema.GroupKind{Group: k.Group, Kind: k.Kind}
		}
		return out
	}
	d := project.Spec.Deployment
	return deploy.Policy{AllowedKinds: kinds(d.AllowedKinds), DeniedKinds: kinds(d.DeniedKinds), AllowedClusterRoles: d.AllowedClusterRoles}
}

// hasLabels says whether o carries every label of want.
func hasLabels(o client.Object, want map[string]string) bool {
	for k, v := range want {
		if o.GetLabels()[k] != v {
			return false
		}
	}
	return true
}
