package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

var txCases = []testCase{
	{"CommitVisible", func(t *testing.T, b *testBundle) {
		tx, err := b.store.Begin(b.ctx)
		requireOK(t, err, "begin")
		c := Cluster(b.ctx, t, tx, &ClusterOpts{Name: "in-tx"})
		got, err := tx.ClusterGetByName(b.ctx, "in-tx")
		requireOK(t, err, "read own write inside the transaction")
		requireEqual(t, got, c, "read inside")
		requireOK(t, tx.Commit(b.ctx), "commit")
		got, err = b.store.ClusterGetByName(b.ctx, "in-tx")
		requireOK(t, err, "read after commit")
		requireEqual(t, got, c, "read after commit")
		requireOK(t, tx.Rollback(b.ctx), "rollback after commit is a no-op")
	}},
	{"RollbackInvisible", func(t *testing.T, b *testBundle) {
		tx, err := b.store.Begin(b.ctx)
		requireOK(t, err, "begin")
		Cluster(b.ctx, t, tx, &ClusterOpts{Name: "gone"})
		o := Operator(b.ctx, t, tx, nil)
		_, err = tx.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{OperatorID: o.ID, Version: "1.0.0"})
		requireOK(t, err, "upsert in tx")
		requireOK(t, tx.Rollback(b.ctx), "rollback")
		_, err = b.store.ClusterGetByName(b.ctx, "gone")
		requireErr(t, err, store.ErrNotFound, "cluster after rollback")
		_, err = b.store.OperatorGetByID(b.ctx, o.ID)
		requireErr(t, err, store.ErrNotFound, "operator after rollback")
		n, err := b.store.OperatorCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, 0, "operators after rollback")
	}},
	{"WithTxErrorRollsBack", func(t *testing.T, b *testBundle) {
		boom := errors.New("boom")
		err := store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			Cluster(ctx, t, tx, &ClusterOpts{Name: "half"})
			return boom
		})
		requireErr(t, err, boom, "WithTx returns fn's error")
		_, err = b.store.ClusterGetByName(b.ctx, "half")
		requireErr(t, err, store.ErrNotFound, "nothing half-written")
		// A store error inside (a duplicate) rolls back what came before it too.
		Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "dup"})
		err = store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			Operator(ctx, t, tx, &OperatorOpts{Name: "before-dup"})
			_, err := tx.ClusterCreate(ctx, &store.ClusterCreateParams{ID: "7b0f7f4e-5d8e-4a52-9d8e-1c0c2a9f0b11",
				Name: "dup", Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "k1"})
			return err
		})
		requireErr(t, err, store.ErrAlreadyExists, "duplicate inside WithTx")
		_, err = b.store.OperatorGetByName(b.ctx, "before-dup")
		requireErr(t, err, store.ErrNotFound, "write before the duplicate rolled back")
	}},
	{"WithTxVCommits", func(t *testing.T, b *testBundle) {
		c, err := store.WithTxV(b.ctx, b.store, func(ctx context.Context, tx store.Tx) (*store.Cluster, error) {
			return tx.ClusterCreate(ctx, &store.ClusterCreateParams{ID: "0d7cc2b9-63a4-4f6f-8a3e-5f1c0f6a8b21",
				Name: "v", Environment: store.EnvironmentStaging, KubeconfigCiphertext: []byte("k"), KeyID: "k1"})
		})
		requireOK(t, err, "WithTxV")
		got, err := b.store.ClusterGetByName(b.ctx, "v")
		requireOK(t, err, "get")
		requireEqual(t, got, c, "committed")
	}},
	{"CancelledContextRollsBack", func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(b.ctx)
		err := store.WithTx(ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			Cluster(ctx, t, tx, &ClusterOpts{Name: "cancelled"})
			cancel()
			return ctx.Err()
		})
		requireErr(t, err, context.Canceled, "WithTx after cancel")
		_, err = b.store.ClusterGetByName(b.ctx, "cancelled")
		requireErr(t, err, store.ErrNotFound, "nothing written")
		// The store still works (the write connection was released).
		Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "after"})
	}},
}
