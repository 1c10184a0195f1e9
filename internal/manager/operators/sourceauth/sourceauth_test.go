package sourceauth

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/manager/store/storetest"
)

func keyLine(t *testing.T) string {
	t.Helper()
	l, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func keyring(t *testing.T, lines ...string) *clusters.Keyring {
	t.Helper()
	k, err := clusters.ParseKeyring([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSealRotateOpen: credentials sealed under one key are opened, bound to their operator,
// re-sealed by RotateKeys under the new primary key (the operator's UpdatedAt kept), and opened
// by a keyring holding only the new key afterwards.
func TestSealRotateOpen(t *testing.T) {
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "m.db"), sqlitestore.WithMigrate())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	oldLine, newLine := keyLine(t), keyLine(t)
	old := keyring(t, oldLine)
	op := storetest.Operator(ctx, t, st, &storetest.OperatorOpts{Name: "private"})
	other := storetest.Operator(ctx, t, st, &storetest.OperatorOpts{Name: "other"})
	creds := operators.Credentials{Username: "ci", Password: "s3cret"}
	ct, kid, err := Seal(old, op.ID, creds)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(ct, []byte("s3cret")) {
		t.Fatal("the ciphertext holds the password")
	}
	if _, err := st.OperatorConfigSet(ctx, &store.OperatorConfigSetParams{Now: op.UpdatedAt,
		OperatorConfig: store.OperatorConfig{OperatorID: op.ID, CredentialsCiphertext: ct, KeyID: kid}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(old, &store.OperatorConfig{OperatorID: other.ID, CredentialsCiphertext: ct, KeyID: kid}); err == nil {
		t.Fatal("credentials sealed for one operator opened for another")
	}
	ref, err := Ref(ctx, st, old, op)
	if err != nil || ref.Auth != creds || ref.Repository != op.ChartRepository {
		t.Fatalf("ref %+v, %v", ref, err)
	}

	both := keyring(t, newLine, oldLine)
	n, err := RotateKeys(ctx, st, both)
	if err != nil || n != 1 {
		t.Fatalf("rotated %d, %v; want 1", n, err)
	}
	if n, err := RotateKeys(ctx, st, both); err != nil || n != 0 {
		t.Fatalf("second rotation re-sealed %d, %v; want 0", n, err)
	}
	onlyNew := keyring(t, newLine)
	got, err := Lookup(st, onlyNew)(ctx, op)
	if err != nil || got != creds {
		t.Fatalf("after rotation: %v, %v", got, err)
	}
	after, err := st.OperatorGetByID(ctx, op.ID)
	if err != nil || !after.UpdatedAt.Equal(op.UpdatedAt) {
		t.Fatalf("rotation changed UpdatedAt: %v → %v (%v)", op.UpdatedAt, after.UpdatedAt, err)
	}
	if _, err := Lookup(st, old)(ctx, op); err == nil {
		t.Fatal("the old key alone still opens the re-sealed credentials")
	}
	if c, err := Lookup(st, nil)(ctx, other); err != nil || !c.IsAnonymous() {
		t.Fatalf("an operator without credentials: %v, %v", c, err)
	}
}
