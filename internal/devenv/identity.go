package devenv

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/config"
)

const (
	operatorNamespace = "slipway-system"
	// operatorUser is the identity the operator runs as, the name its ServiceAccount has in a cluster.
	operatorUser = "system:serviceaccount:slipway-system:slipway-operator"
)

// installOperatorIdentity creates the operator namespace, binds the generated ClusterRole and the
// leader-election Role to the operator's user and writes its kubeconfig. The operator runs with
// exactly the permissions the manifests grant, so a missing RBAC marker shows up in dev.
func (e *Env) installOperatorIdentity(ctx context.Context) (string, error) {
	c := e.cp.Client
	role, nsRoles, err := config.ManagerRoles()
	if err != nil {
		return "", err
	}
	leaderRole, err := config.LeaderElectionRole()
	if err != nil {
		return "", err
	}
	leaderRole.Namespace = operatorNamespace
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: operatorUser}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}},
		role,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   subject,
		},
		leaderRole,
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: leaderRole.Name, Namespace: operatorNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leaderRole.Name},
			Subjects:   subject,
		},
	}
	for _, r := range nsRoles {
		objs = append(objs, r, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
			Subjects:   subject,
		})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return "", fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return e.cp.UserKubeconfig(filepath.Join(e.opts.Dir, "operator.kubeconfig"), operatorUser,
		"system:serviceaccounts", "system:serviceaccounts:"+operatorNamespace, "system:authenticated")
}
