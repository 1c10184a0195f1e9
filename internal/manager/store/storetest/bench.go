package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Seed stores operators operators (three versions each) and clusters clusters, in one transaction.
func Seed(ctx context.Context, tb testing.TB, s store.Store, operators, clusters int) {
	tb.Helper()
	err := store.WithTx(ctx, s, func(ctx context.Context, tx store.Tx) error {
		for i := range operators {
			o, err := tx.OperatorCreate(ctx, &store.OperatorCreateParams{ID: uuid.NewString(),
				Name: fmt.Sprintf("operator-%04d", i), Namespace: fmt.Sprintf("ns-%d", i%10),
				ChartRepository: "oci://registry.example/charts", ChartName: fmt.Sprintf("chart-%04d", i)})
			if err != nil {
				return err
			}
			for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
				if _, err := tx.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: o.ID, Version: v}); err != nil {
					return err
				}
			}
		}
		for i := range clusters {
			_, err := tx.ClusterCreate(ctx, &store.ClusterCreateParams{ID: uuid.NewString(),
				Name: fmt.Sprintf("cluster-%04d", i), Environment: store.Environments[i%3],
				KubernetesVersion: "v1.37.1", Health: store.HealthHealthy,
				KubeconfigCiphertext: make([]byte, 4096), KeyID: "k1"})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("seed: %v", err)
	}
}

// BenchOperatorList measures one OperatorList page of 100 (seed the store first).
func BenchOperatorList(b *testing.B, s store.Store) {
	ctx := b.Context()
	for b.Loop() {
		page, err := s.OperatorList(ctx, &store.OperatorListParams{Limit: 100})
		if err != nil || len(page) != 100 {
			b.Fatalf("list: %d operators, %v", len(page), err)
		}
	}
}

// BenchClusterList measures one ClusterList of every cluster (up to 1,000; seed first).
func BenchClusterList(b *testing.B, s store.Store, want int) {
	ctx := b.Context()
	for b.Loop() {
		page, err := s.ClusterList(ctx, &store.ClusterListParams{Limit: store.MaxLimit})
		if err != nil || len(page) != want {
			b.Fatalf("list: %d clusters, want %d, %v", len(page), want, err)
		}
	}
}

// Benchmark runs every store benchmark on an engine, each on a fresh store from newStore: the
// lists with 500 operators and 100 clusters stored, the rollout writes, and the engine's claims
// and admissions.
func Benchmark(b *testing.B, newStore func(testing.TB) store.Store) {
	b.Run("OperatorList", func(b *testing.B) {
		s := newStore(b)
		Seed(b.Context(), b, s, 500, 100)
		BenchOperatorList(b, s)
	})
	b.Run("ClusterList", func(b *testing.B) {
		s := newStore(b)
		Seed(b.Context(), b, s, 500, 100)
		BenchClusterList(b, s, 100)
	})
	b.Run("DeploymentCreate", func(b *testing.B) { BenchDeploymentCreate(b, newStore(b)) })
	b.Run("DeploymentUpdate", func(b *testing.B) { BenchDeploymentUpdate(b, newStore(b)) })
	b.Run("DeploymentEventInsert", func(b *testing.B) { BenchDeploymentEventInsert(b, newStore(b)) })
	b.Run("DeploymentClaim", func(b *testing.B) { BenchDeploymentClaim(b, newStore(b)) })
	b.Run("DeploymentAdmit", func(b *testing.B) { BenchDeploymentAdmit(b, newStore(b)) })
}
