package clusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// The manager's own identity in every registered cluster. Registration creates, with the
// registered (admin) kubeconfig:
//
//   - Namespace slipway-manager and ServiceAccount slipway-manager in it;
//   - ClusterRole slipway-manager, bound to the ServiceAccount by ClusterRoleBinding
//     slipway-manager: every verb on every resource of every API group, and every non-resource
//     URL. That is cluster-admin's reach, said plainly: the manager installs operator charts with
//     Helm (CRDs, namespaces, RBAC that it must hold to grant, Deployments, webhook
//     configurations), and Kubernetes' RBAC escalation checks make anything narrower fail on the
//     first chart that grants a right the manager lacks;
//   - Role and RoleBinding slipway-manager-token in the namespace: create serviceaccounts/token
//     for resourceNames [slipway-manager] only, so the ServiceAccount can renew its own token
//     and nothing else's even if the ClusterRole is narrowed in the cluster later.
//
// Then a token of the ServiceAccount is requested (TokenRequest, TokenTTL long). Every later call
// uses it; the ServiceAccount renews it itself past half its life; the admin kubeconfig is used
// again only when the token has expired (the manager was down for longer than its life) and to
// delete these objects when the cluster is removed.
const (
	IdentityNamespace  = "slipway-manager"
	ServiceAccountName = "slipway-manager"
	ClusterRoleName    = "slipway-manager"
	TokenRoleName      = "slipway-manager-token"
	// ServiceAccountUser is the ServiceAccount's user name in the cluster.
	ServiceAccountUser = "system:serviceaccount:" + IdentityNamespace + ":" + ServiceAccountName
	managedByLabel     = "app.kubernetes.io/managed-by"
	managedByValue     = "slipway-manager"
)

// DefaultTokenTTL is the life of the ServiceAccount tokens the manager requests.
const DefaultTokenTTL = time.Hour

func identityMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{managedByLabel: managedByValue}}
}

// clusterRoleRules is what the ClusterRole grants (see the package constants).
var clusterRoleRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
}

var tokenRoleRules = []rbacv1.PolicyRule{{
	APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"},
	ResourceNames: []string{ServiceAccountName},
}}

var saSubject = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: IdentityNamespace}}

// token is a ServiceAccount token and when it expires.
type token struct {
	value   string
	expires time.Time
}

// setUpIdentity creates (or brings up to date) the manager's identity with an admin client and
// requests a token for it. It returns undo, which deletes what this call created (not what was
// there before), for a registration that fails later.
func setUpIdentity(ctx context.Context, admin kubernetes.Interface, ttl time.Duration) (_ *token, undo func(context.Context), err error) {
	var created []func(context.Context) error
	undoAll := func(ctx context.Context) {
		for i := len(created) - 1; i >= 0; i-- {
			_ = created[i](ctx)
		}
	}
	defer func() {
		if err != nil {
			undoAll(context.WithoutCancel(ctx))
		}
	}()
	step := func(what string, ok bool, e error, del func(context.Context) error) error {
		if e != nil {
			return identityError(what, e)
		}
		if ok {
			created = append(created, del)
		}
		return nil
	}

	nsAPI, sas := admin.CoreV1().Namespaces(), admin.CoreV1().ServiceAccounts(IdentityNamespace)
	ns, err := nsAPI.Get(ctx, IdentityNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = nsAPI.Create(ctx, &corev1.Namespace{ObjectMeta: identityMeta(IdentityNamespace, "")}, metav1.CreateOptions{})
		made := err == nil
		if apierrors.IsAlreadyExists(err) { // a concurrent registration of the same cluster
			err = nil
		}
		if err := step("create namespace "+IdentityNamespace, made, err, func(ctx context.Context) error {
			return nsAPI.Delete(ctx, IdentityNamespace, metav1.DeleteOptions{})
		}); err != nil {
			return nil, nil, err
		}
	case err != nil:
		return nil, nil, identityError("read namespace "+IdentityNamespace, err)
	case ns.Status.Phase == corev1.NamespaceTerminating:
		return nil, nil, &invalid.Error{Field: "kubeconfig", Reason: "conflict",
			Message: "namespace " + IdentityNamespace + " is being deleted in the cluster (a former registration was removed); try again once it is gone"}
	}

	made, err := ensure(ctx, func(ctx context.Context) error {
		_, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: identityMeta(ServiceAccountName, IdentityNamespace)}, metav1.CreateOptions{})
		return err
	}, nil)
	if err := step("create serviceaccount "+ServiceAccountName, made, err, func(ctx context.Context) error {
		return sas.Delete(ctx, ServiceAccountName, metav1.DeleteOptions{})
	}); err != nil {
		return nil, nil, err
	}

	crs := admin.RbacV1().ClusterRoles()
	made, err = ensure(ctx, func(ctx context.Context) error {
		_, err := crs.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: identityMeta(ClusterRoleName, ""), Rules: clusterRoleRules}, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error {
		cr, err := crs.Get(ctx, ClusterRoleName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cr.Rules = clusterRoleRules
		_, err = crs.Update(ctx, cr, metav1.UpdateOptions{})
		return err
	})
	if err := step("create clusterrole "+ClusterRoleName, made, err, func(ctx context.Context) error {
		return crs.Delete(ctx, ClusterRoleName, metav1.DeleteOptions{})
	}); err != nil {
		return nil, nil, err
	}

	crbs := admin.RbacV1().ClusterRoleBindings()
	crbRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName}
	made, err = ensure(ctx, func(ctx context.Context) error {
		_, err := crbs.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: identityMeta(ClusterRoleName, ""), RoleRef: crbRef, Subjects: saSubject}, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error {
		b, err := crbs.Get(ctx, ClusterRoleName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if b.RoleRef != crbRef { // roleRef is immutable
			if err := crbs.Delete(ctx, ClusterRoleName, metav1.DeleteOptions{}); err != nil {
				return err
			}
			_, err = crbs.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: identityMeta(ClusterRoleName, ""), RoleRef: crbRef, Subjects: saSubject}, metav1.CreateOptions{})
			return err
		}
		b.Subjects = saSubject
		_, err = crbs.Update(ctx, b, metav1.UpdateOptions{})
		return err
	})
	if err := step("create clusterrolebinding "+ClusterRoleName, made, err, func(ctx context.Context) error {
		return crbs.Delete(ctx, ClusterRoleName, metav1.DeleteOptions{})
	}); err != nil {
		return nil, nil, err
	}

	roles, rbs := admin.RbacV1().Roles(IdentityNamespace), admin.RbacV1().RoleBindings(IdentityNamespace)
	made, err = ensure(ctx, func(ctx context.Context) error {
		_, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: identityMeta(TokenRoleName, IdentityNamespace), Rules: tokenRoleRules}, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error {
		r, err := roles.Get(ctx, TokenRoleName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		r.Rules = tokenRoleRules
		_, err = roles.Update(ctx, r, metav1.UpdateOptions{})
		return err
	})
	if err := step("create role "+TokenRoleName, made, err, func(ctx context.Context) error {
		return roles.Delete(ctx, TokenRoleName, metav1.DeleteOptions{})
	}); err != nil {
		return nil, nil, err
	}
	rbRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: TokenRoleName}
	made, err = ensure(ctx, func(ctx context.Context) error {
		_, err := rbs.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: identityMeta(TokenRoleName, IdentityNamespace), RoleRef: rbRef, Subjects: saSubject}, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error {
		b, err := rbs.Get(ctx, TokenRoleName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if b.RoleRef != rbRef {
			if err := rbs.Delete(ctx, TokenRoleName, metav1.DeleteOptions{}); err != nil {
				return err
			}
			_, err = rbs.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: identityMeta(TokenRoleName, IdentityNamespace), RoleRef: rbRef, Subjects: saSubject}, metav1.CreateOptions{})
			return err
		}
		b.Subjects = saSubject
		_, err = rbs.Update(ctx, b, metav1.UpdateOptions{})
		return err
	})
	if err := step("create rolebinding "+TokenRoleName, made, err, func(ctx context.Context) error {
		return rbs.Delete(ctx, TokenRoleName, metav1.DeleteOptions{})
	}); err != nil {
		return nil, nil, err
	}

	tok, err := requestToken(ctx, admin, ttl)
	if err != nil {
		return nil, nil, identityError("request a token for serviceaccount "+ServiceAccountName, err)
	}
	return tok, undoAll, nil
}

// ensure runs create; when the object exists already it runs update (nil: leave it as is).
// made reports whether create made it.
func ensure(ctx context.Context, create, update func(context.Context) error) (made bool, err error) {
	err = create(ctx)
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsAlreadyExists(err):
		return false, err
	case update == nil:
		return false, nil
	}
	// Another registration of the same cluster may update it at the same time.
	return false, retry.RetryOnConflict(retry.DefaultRetry, func() error { return update(ctx) })
}

// requestToken asks for a token of the manager's ServiceAccount with the client's identity: the
// admin at setup, the ServiceAccount itself to renew.
func requestToken(ctx context.Context, cs kubernetes.Interface, ttl time.Duration) (*token, error) {
	secs := int64(ttl / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(IdentityNamespace).CreateToken(ctx, ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if tr.Status.Token == "" {
		return nil, errors.New("the TokenRequest answer holds no token")
	}
	return &token{value: tr.Status.Token, expires: tr.Status.ExpirationTimestamp.Time}, nil
}

// removeIdentity deletes what setUpIdentity creates. Not-found is success.
func removeIdentity(ctx context.Context, admin kubernetes.Interface) error {
	var errs []error
	del := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, identityError("delete "+what, err))
		}
	}
	del("clusterrolebinding "+ClusterRoleName, admin.RbacV1().ClusterRoleBindings().Delete(ctx, ClusterRoleName, metav1.DeleteOptions{}))
	del("clusterrole "+ClusterRoleName, admin.RbacV1().ClusterRoles().Delete(ctx, ClusterRoleName, metav1.DeleteOptions{}))
	// The namespace takes the ServiceAccount, the Role and the RoleBinding with it.
	del("namespace "+IdentityNamespace, admin.CoreV1().Namespaces().Delete(ctx, IdentityNamespace, metav1.DeleteOptions{}))
	return errors.Join(errs...)
}

// identityError classifies a failed step of the identity's setup or removal.
func identityError(what string, err error) error {
	if apierrors.IsForbidden(err) {
		return &invalid.Error{Field: "kubeconfig", Reason: "unauthorized",
			Message: fmt.Sprintf("the credentials may not %s (403 Forbidden): registration needs a cluster-admin credential, "+
				"since the manager sets up its own ServiceAccount with cluster-wide rights", what)}
	}
	return classify("kubeconfig", what, err, DefaultConnectTimeout)
}
