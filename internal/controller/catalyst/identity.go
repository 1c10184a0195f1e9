package catalyst

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
)

// The environment's own identity: everything the repository's deployment renders and applies
// is done as this ServiceAccount of the environment namespace (the deploy engine impersonates
// it), bound by a RoleBinding of the same name in that namespace only.
const (
	// DeployerServiceAccount is the ServiceAccount of every environment namespace the deploy
	// acts as. The operator's RBAC lets it impersonate this name only.
	DeployerServiceAccount = "catalyst-deployer"
	// DeployerRoleBinding binds DeployerServiceAccount to the Project's ClusterRole.
	DeployerRoleBinding = "catalyst-deployer"
	// DefaultDeployerClusterRole is the ClusterRole of Projects that name none
	// (--catalyst-deployer-cluster-role); the operator's RBAC lets it bind this one only.
	DefaultDeployerClusterRole = "slipway-catalyst-deployer"
)

// deployerClusterRole is the ClusterRole the environment's deployer is bound to.
func (r *EnvironmentReconciler) deployerClusterRole(project *catalystv1alpha1.Project) string {
	if cr := project.Spec.Deployment.ClusterRole; cr != "" {
		return cr
	}
	return r.DeployerClusterRole
}

// stepDeployer keeps the environment's deployer ServiceAccount and its RoleBinding to the
// Project's ClusterRole. A RoleBinding's roleRef cannot change: when the Project names another
// ClusterRole the binding is deleted and created again.
func (r *EnvironmentReconciler) stepDeployer(ctx context.Context, s *envScope) error {
	labels := ownerLabels(s.env, ComponentEnvironment)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DeployerServiceAccount, Namespace: s.nsName, Labels: labels},
		// Nothing of the deployment runs as it: a pod naming it gets no token unless it asks.
		AutomountServiceAccountToken: ptr.To(false)}
	// Read first: a reconcile with nothing to change writes nothing. (ServiceAccounts and
	// RoleBindings are not cached: the operator may not list or watch them.)
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sa), &corev1.ServiceAccount{})
	if apierrors.IsNotFound(err) {
		err = r.Create(ctx, sa)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/%s: %w", s.nsName, DeployerServiceAccount, err)
	}
	role := r.deployerClusterRole(s.project)
	want := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	live := &rbacv1.RoleBinding{}
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.nsName, Name: DeployerRoleBinding}, live)
	switch {
	case err == nil && live.RoleRef == want && len(live.Subjects) == 1:
		return nil
	case err == nil:
		if err := r.Delete(ctx, live, client.Preconditions{UID: &live.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting RoleBinding %s/%s to rebind it: %w", s.nsName, DeployerRoleBinding, err)
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading RoleBinding %s/%s: %w", s.nsName, DeployerRoleBinding, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: DeployerRoleBinding, Namespace: s.nsName, Labels: labels},
		RoleRef:  want,
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: DeployerServiceAccount, Namespace: s.nsName}}}
	err = r.Create(ctx, rb)
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err):
		s.fail(&failure{condition: catalystv1alpha1.DeploymentReadyCondition, reason: catalystv1alpha1.DeployerNotBoundReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true,
			message: fmt.Sprintf("the operator may not bind ClusterRole %s to the environment's ServiceAccount %s: name a ClusterRole it may bind in the Project's spec.deployment.clusterRole, or let it bind this one (RBAC verb bind; docs/catalyst.md, Security model)",
				role, DeployerServiceAccount)})
		return errStop
	}
	return fmt.Errorf("creating RoleBinding %s/%s: %w", s.nsName, DeployerRoleBinding, err)
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
