package clusters

import (
	"context"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// HealthHook learns each recorded health check of a cluster inside the transaction that stores
// it (notifications.Service: a cluster turning Unhealthy is notified exactly when recorded).
type HealthHook interface {
	ClusterHealth(ctx context.Context, tx store.Executor, c *store.Cluster) error
}

// recordHealth stores a health check, telling Config.HealthHook in the same transaction.
func (m *Manager) recordHealth(ctx context.Context, p *store.ClusterUpdateHealthParams) (*store.Cluster, error) {
	if m.cfg.HealthHook == nil {
		return m.store.ClusterUpdateHealth(ctx, p)
	}
	return store.WithTxV(ctx, m.store, func(ctx context.Context, tx store.Tx) (*store.Cluster, error) {
		c, err := tx.ClusterUpdateHealth(ctx, p)
		if err != nil {
			return nil, err
		}
		return c, m.cfg.HealthHook.ClusterHealth(ctx, tx, c)
	})
}
