package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/sourceauth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// credentialsIn validates request credentials (nil: anonymous) into operators.Credentials.
func credentialsIn(c *api.ChartCredentials) (operators.Credentials, error) {
	if c == nil {
		return operators.Credentials{}, nil
	}
	if c.Set {
		return operators.Credentials{}, invalid.Reasoned("chart.credentials", "format", nil, "set is read-only: give username and password, or token")
	}
	out := operators.Credentials{Username: c.Username, Password: c.Password, Token: c.Token}
	return out, operators.ValidateCredentials(out)
}

var errNoSealer = errors.New("this manager has no keyring to seal chart source credentials with")

// configEdit is a change of an operator's config: credentials and default values, each nil to
// keep.
type configEdit struct {
	creds  *operators.Credentials
	values *json.RawMessage
}

func (c configEdit) empty() bool { return c.creds == nil && c.values == nil }

// storeConfig applies edit to the operator's config in tx: credentials sealed, default values
// as given.
func (s *Server) storeConfig(ctx context.Context, tx store.Tx, operatorID string, edit configEdit, now time.Time) error {
	cur, err := tx.OperatorConfigGet(ctx, operatorID)
	if err != nil {
		return err
	}
	next := *cur
	if edit.values != nil {
		next.DefaultValues = *edit.values
	}
	switch {
	case edit.creds == nil:
	case edit.creds.IsAnonymous():
		next.CredentialsCiphertext, next.KeyID = nil, ""
	case s.sealer == nil:
		return errNoSealer
	default:
		if next.CredentialsCiphertext, next.KeyID, err = sourceauth.Seal(s.sealer, operatorID, *edit.creds); err != nil {
			return err
		}
	}
	_, err = tx.OperatorConfigSet(ctx, &store.OperatorConfigSetParams{OperatorConfig: next, Now: now})
	return err
}

// MaxDefaultValuesBytes bounds an operator's default values.
const MaxDefaultValuesBytes = 256 << 10

// defaultValuesIn validates default values: absent or null is none (nil), else a JSON object of
// at most MaxDefaultValuesBytes, compacted.
func defaultValuesIn(raw json.RawMessage) (json.RawMessage, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	if len(b) > MaxDefaultValuesBytes {
		return nil, invalid.Reasoned("defaultValues", "tooLarge", nil, "%d bytes, more than the limit of %d", len(b), MaxDefaultValuesBytes)
	}
	if b[0] != '{' {
		return nil, invalid.Reasoned("defaultValues", "format", nil, "must be a JSON object of Helm values")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, invalid.Reasoned("defaultValues", "format", err, "not JSON: %v", err)
	}
	return out.Bytes(), nil
}

// credentialsOf opens the operator's stored credentials.
func (s *Server) credentialsOf(ctx context.Context, operatorID string) (operators.Credentials, error) {
	cfg, err := s.store.OperatorConfigGet(ctx, operatorID)
	if err != nil {
		return operators.Credentials{}, err
	}
	return sourceauth.Open(s.sealer, cfg)
}

// configOut fills the answer's credentials (the user name and that they are set; only that they
// are set when they cannot be opened) and default values.
func (s *Server) configOut(ctx context.Context, out *api.Operator) error {
	cfg, err := s.store.OperatorConfigGet(ctx, out.ID)
	if err != nil {
		return err
	}
	out.DefaultValues = cfg.DefaultValues
	if len(cfg.CredentialsCiphertext) == 0 {
		return nil
	}
	out.Chart.Credentials = &api.ChartCredentials{Set: true}
	if c, err := sourceauth.Open(s.sealer, cfg); err == nil {
		out.Chart.Credentials.Username = c.Username
	} else {
		s.log.WarnContext(ctx, "server: Cannot open an operator's chart source credentials", "operatorName", out.Name, "error", err.Error())
	}
	return nil
}
