// Package sourceauth keeps the credentials of operators' private chart sources sealed in the
// store, with the keyring that seals cluster credentials (*clusters.Keyring), and opens them for
// every read of a source: registration's and PATCH's validation, the refresh loop, the engine's
// chart download.
package sourceauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Sealer seals and opens secrets under named keys (*clusters.Keyring).
type Sealer interface {
	Seal(plaintext, additionalData []byte) ([]byte, string, error)
	Open(ciphertext []byte, keyID string, additionalData []byte) ([]byte, error)
	Primary() string
}

// sealed is the JSON sealed for an operator.
type sealed struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Token    string `json:"token,omitempty"`
}

// aad binds a ciphertext to its operator: it cannot be moved to another one.
func aad(operatorID string) []byte {
	return []byte("slipway-manager/v1/operator-credentials/" + operatorID)
}

// Seal seals c for the operator with operatorID: the ciphertext and its key id; nil and "" for
// anonymous credentials.
func Seal(s Sealer, operatorID string, c operators.Credentials) ([]byte, string, error) {
	if c.IsAnonymous() {
		return nil, "", nil
	}
	plain, err := json.Marshal(sealed{Username: c.Username, Password: c.Password, Token: c.Token})
	if err != nil {
		return nil, "", err
	}
	return s.Seal(plain, aad(operatorID))
}

// Open opens cfg's credentials (anonymous when it has none).
func Open(s Sealer, cfg *store.OperatorConfig) (operators.Credentials, error) {
	if len(cfg.CredentialsCiphertext) == 0 {
		return operators.Credentials{}, nil
	}
	if s == nil {
		return operators.Credentials{}, errors.New("the operator's chart source has credentials but no keyring is configured")
	}
	plain, err := s.Open(cfg.CredentialsCiphertext, cfg.KeyID, aad(cfg.OperatorID))
	if err != nil {
		return operators.Credentials{}, fmt.Errorf("opening the chart source credentials of operator %s: %w", cfg.OperatorID, err)
	}
	var v sealed
	if err := json.Unmarshal(plain, &v); err != nil {
		return operators.Credentials{}, fmt.Errorf("the chart source credentials of operator %s: %w", cfg.OperatorID, err)
	}
	return operators.Credentials{Username: v.Username, Password: v.Password, Token: v.Token}, nil
}

// Lookup returns the function the refresh loop and the engine read an operator's credentials
// with.
func Lookup(exec store.Executor, s Sealer) func(ctx context.Context, op *store.Operator) (operators.Credentials, error) {
	return func(ctx context.Context, op *store.Operator) (operators.Credentials, error) {
		cfg, err := exec.OperatorConfigGet(ctx, op.ID)
		if err != nil {
			return operators.Credentials{}, err
		}
		return Open(s, cfg)
	}
}

// Ref is op's chart source with its credentials.
func Ref(ctx context.Context, exec store.Executor, s Sealer, op *store.Operator) (operators.ChartRef, error) {
	c, err := Lookup(exec, s)(ctx, op)
	return operators.ChartRef{Repository: op.ChartRepository, Name: op.ChartName, Auth: c}, err
}

// RotateKeys re-seals every operator's credentials not sealed by the primary key: how many it
// re-sealed. An operator's UpdatedAt is kept.
func RotateKeys(ctx context.Context, st store.Store, s Sealer) (int, error) {
	all, err := st.OperatorConfigListSealed(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, cfg := range all {
		if cfg.KeyID == s.Primary() {
			continue
		}
		if err := reseal(ctx, st, s, cfg); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func reseal(ctx context.Context, st store.Store, s Sealer, cfg *store.OperatorConfig) error {
	c, err := Open(s, cfg)
	if err != nil {
		return err
	}
	return store.WithTx(ctx, st, func(ctx context.Context, tx store.Tx) error {
		op, err := tx.OperatorGetByID(ctx, cfg.OperatorID)
		if err != nil {
			return err
		}
		cur, err := tx.OperatorConfigGet(ctx, cfg.OperatorID)
		if err != nil {
			return err
		}
		if string(cur.CredentialsCiphertext) != string(cfg.CredentialsCiphertext) {
			return nil // changed meanwhile: sealed by the primary key already
		}
		next := *cur
		if next.CredentialsCiphertext, next.KeyID, err = Seal(s, cfg.OperatorID, c); err != nil {
			return err
		}
		_, err = tx.OperatorConfigSet(ctx, &store.OperatorConfigSetParams{OperatorConfig: next, Now: op.UpdatedAt})
		return err
	})
}
