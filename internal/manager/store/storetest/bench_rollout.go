package storetest

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// BenchDeploymentCreate measures creating a deployment to 10 clusters (each in its own
// transaction with its clusters), then completing it, so the clusters are free again.
func BenchDeploymentCreate(b *testing.B, s store.Store) {
	ctx := b.Context()
	op := Operator(ctx, b, s, nil)
	clusters := seq("c", 10)
	for b.Loop() {
		d, err := s.DeploymentCreate(ctx, NewDeployment(ctx, b, s, &DeploymentOpts{Operator: op, Clusters: clusters}))
		if err != nil {
			b.Fatalf("create: %v", err)
		}
		b.StopTimer()
		if _, err := s.DeploymentUpdate(ctx, d.ID, func(d *store.Deployment) error {
			d.Status = store.DeploymentCompleted
			return nil
		}); err != nil {
			b.Fatalf("complete: %v", err)
		}
		b.StartTimer()
	}
}

// BenchDeploymentUpdate measures one DeploymentUpdate of a deployment to 10 clusters that changes
// the deployment and one cluster (what every step of a rollout writes).
func BenchDeploymentUpdate(b *testing.B, s store.Store) {
	ctx := b.Context()
	d := Deployment(ctx, b, s, &DeploymentOpts{Clusters: seq("c", 10)})
	i := 0
	for b.Loop() {
		i++
		_, err := s.DeploymentUpdate(ctx, d.ID, func(d *store.Deployment) error {
			d.Reason = strconv.Itoa(i)
			c := d.Clusters[i%len(d.Clusters)]
			c.HelmRevision++
			return nil
		})
		if err != nil {
			b.Fatalf("update: %v", err)
		}
	}
}

// BenchDeploymentEventInsert measures appending one event to a deployment.
func BenchDeploymentEventInsert(b *testing.B, s store.Store) {
	ctx := b.Context()
	d := Deployment(ctx, b, s, nil)
	i := 0
	for b.Loop() {
		i++
		if _, err := s.DeploymentEventInsert(ctx, &store.DeploymentEvent{DeploymentID: d.ID, Type: "cluster.healthy",
			Cluster: "c", Message: fmt.Sprint("step ", i)}); err != nil {
			b.Fatalf("insert: %v", err)
		}
	}
}
