package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// sameJSON fails unless got and want are the same JSON document (PostgreSQL keeps json as given,
// but compare by meaning).
func sameJSON(t *testing.T, got, want json.RawMessage, what string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %q is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	requireEqual(t, g, w, what)
}

var operatorConfigCases = []testCase{
	{"NewOperatorHasNone", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "plain"})
		c, err := b.store.OperatorConfigGet(b.ctx, op.ID)
		requireOK(t, err, "get")
		requireEqual(t, c, &store.OperatorConfig{OperatorID: op.ID}, "config of a new operator")
		_, err = b.store.OperatorConfigGet(b.ctx, uuid.NewString())
		requireErr(t, err, store.ErrNotFound, "unknown operator")
	}},
	{"SetReplacesAndRemoves", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "private"})
		later := b.now.Add(time.Minute)
		values := json.RawMessage(`{"replicas":2,"image":{"tag":"v1"}}`)
		got, err := b.store.OperatorConfigSet(b.ctx, &store.OperatorConfigSetParams{Now: later, OperatorConfig: store.OperatorConfig{
			OperatorID: op.ID, CredentialsCiphertext: []byte{1, 2, 3}, KeyID: "k1", DefaultValues: values}})
		requireOK(t, err, "set")
		requireEqual(t, got.CredentialsCiphertext, []byte{1, 2, 3}, "ciphertext")
		requireEqual(t, got.KeyID, "k1", "key id")
		sameJSON(t, got.DefaultValues, values, "default values")
		read, err := b.store.OperatorConfigGet(b.ctx, op.ID)
		requireOK(t, err, "get")
		requireEqual(t, read.CredentialsCiphertext, []byte{1, 2, 3}, "ciphertext read back")
		sameJSON(t, read.DefaultValues, values, "default values read back")
		o, err := b.store.OperatorGetByName(b.ctx, "private")
		requireOK(t, err, "get operator")
		requireEqual(t, o.UpdatedAt, later, "updated at")

		sealed, err := b.store.OperatorConfigListSealed(b.ctx)
		requireOK(t, err, "list sealed")
		requireEqual(t, len(sealed), 1, "sealed operators")
		requireEqual(t, sealed[0].OperatorID, op.ID, "sealed operator")

		got, err = b.store.OperatorConfigSet(b.ctx, &store.OperatorConfigSetParams{Now: later,
			OperatorConfig: store.OperatorConfig{OperatorID: op.ID}})
		requireOK(t, err, "remove")
		requireEqual(t, got, &store.OperatorConfig{OperatorID: op.ID}, "removed")
		sealed, err = b.store.OperatorConfigListSealed(b.ctx)
		requireOK(t, err, "list sealed")
		requireEqual(t, len(sealed), 0, "sealed operators after removal")

		_, err = b.store.OperatorConfigSet(b.ctx, &store.OperatorConfigSetParams{Now: later,
			OperatorConfig: store.OperatorConfig{OperatorID: uuid.NewString(), KeyID: "k"}})
		requireErr(t, err, store.ErrNotFound, "unknown operator")
		_, err = b.store.OperatorConfigSet(b.ctx, &store.OperatorConfigSetParams{Now: later,
			OperatorConfig: store.OperatorConfig{OperatorID: op.ID, DefaultValues: json.RawMessage(`{nope`)}})
		if err == nil {
			t.Fatal("invalid JSON default values were stored")
		}
	}},
	{"SetInTransactionRollsBack", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "atomic"})
		err := store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.OperatorConfigSet(ctx, &store.OperatorConfigSetParams{Now: b.now,
				OperatorConfig: store.OperatorConfig{OperatorID: op.ID, CredentialsCiphertext: []byte{9}, KeyID: "k"}}); err != nil {
				return err
			}
			return store.ErrAlreadyExists
		})
		requireErr(t, err, store.ErrAlreadyExists, "rolled back")
		c, err := b.store.OperatorConfigGet(b.ctx, op.ID)
		requireOK(t, err, "get")
		requireEqual(t, c, &store.OperatorConfig{OperatorID: op.ID}, "after rollback")
	}},
}
