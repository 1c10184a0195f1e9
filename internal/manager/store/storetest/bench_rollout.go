package storetest

import (
	"fmt"
	"strconv"
	"testing"
	"time"

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

// BenchDeploymentClaim measures one DeploymentClaim of 10 deployments (3 clusters each) among 500
// due ones: each iteration claims at a later time, after the previous claims lapsed, so it takes
// the same 10 earliest again.
func BenchDeploymentClaim(b *testing.B, s store.Store) {
	ctx := b.Context()
	base := time.Now().UTC().Truncate(time.Microsecond)
	for range 500 {
		Deployment(ctx, b, s, &DeploymentOpts{Clusters: seq("c", 3), NextRunAt: &base})
	}
	const lease = time.Second
	i := 0
	for b.Loop() {
		i++
		got, err := s.DeploymentClaim(ctx, &store.DeploymentClaimParams{Owner: "r" + strconv.Itoa(i%2),
			Now: base.Add(time.Duration(i) * 2 * lease), Lease: lease, Limit: 10})
		if err != nil || len(got) != 10 {
			b.Fatalf("claim: %d deployments, %v", len(got), err)
		}
	}
}

// BenchDeploymentAdmit measures one DeploymentAdmit that admits one Queued deployment, with 20
// running and 50 more queued behind an operator that is rolling back (skipped); the admitted one
// is completed and another queued outside the timer.
func BenchDeploymentAdmit(b *testing.B, s store.Store) {
	ctx := b.Context()
	for range 20 {
		Deployment(ctx, b, s, &DeploymentOpts{Status: store.DeploymentDeploying})
	}
	rolling := Operator(ctx, b, s, nil)
	Deployment(ctx, b, s, &DeploymentOpts{Operator: rolling, Status: store.DeploymentRollingBack})
	for range 50 {
		Deployment(ctx, b, s, &DeploymentOpts{Operator: rolling, Status: store.DeploymentQueued})
	}
	for b.Loop() {
		b.StopTimer()
		Deployment(ctx, b, s, &DeploymentOpts{Status: store.DeploymentQueued})
		b.StartTimer()
		res, err := s.DeploymentAdmit(ctx, &store.DeploymentAdmitParams{Limit: 22, Now: time.Now()})
		if err != nil || len(res.Admitted) != 1 {
			b.Fatalf("admit: %v, %v", res, err)
		}
		b.StopTimer()
		if _, err := s.DeploymentUpdate(ctx, res.Admitted[0], func(d *store.Deployment) error {
			d.Status = store.DeploymentCompleted
			return nil
		}); err != nil {
			b.Fatalf("complete: %v", err)
		}
		b.StartTimer()
	}
}
