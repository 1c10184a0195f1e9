package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// writers is how many goroutines write at once.
const writers = 20

// parallel runs fn(i) for i in [0, writers) at once and returns their errors.
func parallel(fn func(i int) error) []error {
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

var concurrentCases = []testCase{
	{"OneWinsAUniqueName", func(t *testing.T, b *testBundle) {
		errs := parallel(func(int) error {
			_, err := b.store.ClusterCreate(b.ctx, &store.ClusterCreateParams{ID: uuid.NewString(), Name: "contested",
				Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "k1"})
			return err
		})
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrAlreadyExists):
				t.Errorf("a loser got %v, want ErrAlreadyExists", err)
			}
		}
		requireEqual(t, won, 1, "winners")
	}},
	{"DistinctWritersAllSucceed", func(t *testing.T, b *testBundle) {
		errs := parallel(func(i int) error {
			_, err := b.store.OperatorCreate(b.ctx, &store.OperatorCreateParams{ID: uuid.NewString(),
				Name: fmt.Sprintf("op-%02d", i), Namespace: "ns", ChartRepository: "oci://r/c", ChartName: "c"})
			if err != nil {
				return err
			}
			_, err = b.store.AuditInsert(b.ctx, &store.AuditInsertParams{Actor: "a", Action: "operator.create", Result: "success"})
			return err
		})
		requireOK(t, errors.Join(errs...), "concurrent distinct writers")
		n, err := b.store.OperatorCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, writers, "operators")
	}},
	{"UpsertSameVersion", func(t *testing.T, b *testBundle) {
		o := Operator(b.ctx, t, b.store, nil)
		errs := parallel(func(i int) error {
			_, err := b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{
				OperatorID: o.ID, Version: "1.0.0", Digest: fmt.Sprint("d", i)})
			return err
		})
		requireOK(t, errors.Join(errs...), "concurrent upserts of one version")
		vs, err := b.store.OperatorVersionList(b.ctx, o.ID)
		requireOK(t, err, "list")
		requireEqual(t, len(vs), 1, "rows")
	}},
	{"Transactions", func(t *testing.T, b *testBundle) {
		// Read-then-write transactions at once: each counts and then inserts; none may fail
		// with a lock error, and every one commits.
		errs := parallel(func(i int) error {
			return store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.ClusterCount(ctx); err != nil {
					return err
				}
				if _, err := tx.ClusterCreate(ctx, &store.ClusterCreateParams{ID: uuid.NewString(), Name: fmt.Sprintf("c-%02d", i),
					Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "k1"}); err != nil {
					return err
				}
				_, err := tx.AuditInsert(ctx, &store.AuditInsertParams{Actor: "a", Action: "cluster.create", TargetName: fmt.Sprint(i), Result: "success"})
				return err
			})
		})
		requireOK(t, errors.Join(errs...), "concurrent transactions")
		n, err := b.store.ClusterCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, writers, "clusters")
		evs, err := b.store.AuditList(b.ctx, &store.AuditListParams{Action: "cluster.create"})
		requireOK(t, err, "audit")
		requireEqual(t, len(evs), writers, "audit events")
	}},
	{"ReadersDuringWrites", func(t *testing.T, b *testBundle) {
		for i := range 10 {
			Cluster(b.ctx, t, b.store, &ClusterOpts{Name: fmt.Sprintf("seed-%d", i)})
		}
		errs := parallel(func(i int) error {
			if i%2 == 0 {
				_, err := b.store.ClusterList(b.ctx, &store.ClusterListParams{})
				return err
			}
			_, err := b.store.ClusterUpdateHealth(b.ctx, &store.ClusterUpdateHealthParams{
				Name: fmt.Sprintf("seed-%d", i%10), Health: store.HealthHealthy})
			return err
		})
		requireOK(t, errors.Join(errs...), "readers and writers at once")
	}},
}
