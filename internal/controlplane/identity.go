package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/config"
)

// The operator's identity in a cluster: its ServiceAccount in its namespace.
const (
	OperatorNamespace = "slipway-system"
	OperatorUser      = "system:serviceaccount:slipway-system:slipway-operator"
)

// InstallOperatorIdentity creates the operator namespace, binds the generated ClusterRole, the
// namespaced Roles and the leader-election Role to the operator's user, and writes a kubeconfig
// for that user to path. An operator run with it has exactly the permissions the manifests
// grant, so a missing RBAC marker fails in dev and in tests as it would in a cluster. Objects that
// exist already are left as they are.
func (cp *ControlPlane) InstallOperatorIdentity(ctx context.Context, path string) (string, error) {
	role, nsRoles, err := config.ManagerRoles()
	if err != nil {
		return "", err
	}
	leaderRole, err := config.LeaderElectionRole()
	if err != nil {
		return "", err
	}
	leaderRole.Namespace = OperatorNamespace
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: OperatorUser}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}},
		role,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   subject,
		},
	}
	for _, r := range append(nsRoles, leaderRole) {
		objs = append(objs, r, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
			Subjects:   subject,
		})
	}
	for _, o := range objs {
		if err := cp.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return cp.UserKubeconfig(path, OperatorUser,
		"system:serviceaccounts", "system:serviceaccounts:"+OperatorNamespace, "system:authenticated")
}
