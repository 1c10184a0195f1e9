package webapp

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator"
)

// The shard assigner (on the leader) labels WebApps with their shard.
// +kubebuilder:rbac:groups=webapp.slipway.dev,resources=webapps,verbs=patch

// sharding is what the operator needs to shard WebApps: a shard caches its WebApps and the
// Deployments and Services carrying its label (see shardLabels).
var sharding = &operator.Sharding{
	Object: &webappv1.WebApp{},
	Label:  webappv1.ShardLabel,
	Owned:  []client.Object{&appsv1.Deployment{}, &corev1.Service{}},
}

// readOwned reads a WebApp's Deployment or Service into obj, leaving it empty when there is none.
// On a shard, one the cache lacks may exist labelled for the shard the WebApp was on before, or
// not be the WebApp's at all (a name conflict): it is read from the API server, so the apply that
// follows moves the WebApp's own to this shard (its label) and a stranger's is still refused.
func (r *Reconciler) readOwned(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && r.ownedReader != nil {
		err = r.ownedReader.Get(ctx, key, obj)
	}
	return client.IgnoreNotFound(err)
}
