package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/sourceauth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// ChartPatch is PATCH's chart: a field left empty keeps its value; credentials absent keep
// them, null removes them, an object replaces them.
type ChartPatch struct {
	Repository  string              `json:"repository,omitempty"`
	Name        string              `json:"name,omitempty"`
	Credentials OptionalCredentials `json:"credentials"`
}

// OptionalCredentials is a credentials field that tells absent from null.
type OptionalCredentials struct {
	Present bool
	Value   *ChartCredentials
}

// UnmarshalJSON records that the field was given, and whether as null.
func (o *OptionalCredentials) UnmarshalJSON(b []byte) error {
	o.Present = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Value = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c ChartCredentials
	if err := dec.Decode(&c); err != nil {
		return invalid.Reasoned("chart.credentials", "format", nil, "credentials must be an object with username and password, or token")
	}
	o.Value = &c
	return nil
}

// MarshalJSON writes the value (null when absent or removed).
func (o OptionalCredentials) MarshalJSON() ([]byte, error) { return json.Marshal(o.Value) }

// credentialsIn validates request credentials (nil: anonymous) into operators.Credentials.
func credentialsIn(c *ChartCredentials) (operators.Credentials, error) {
	if c == nil {
		return operators.Credentials{}, nil
	}
	if c.Set {
		return operators.Credentials{}, invalid.Reasoned("chart.credentials", "format", nil, "set is read-only: give username and password, or token")
	}
	out := operators.Credentials{Username: c.Username, Password: c.Password, Token: c.Token}
	return out, operators.ValidateCredentials(out)
}

// credentialsOut is what an answer shows of stored credentials: the user name and that they
// are set.
func credentialsOut(c operators.Credentials) *ChartCredentials {
	if c.IsAnonymous() {
		return nil
	}
	return &ChartCredentials{Username: c.Username, Set: true}
}

var errNoSealer = errors.New("this manager has no keyring to seal chart source credentials with")

// storeCredentials seals c for the operator and writes them in tx, keeping its other config.
func (s *Server) storeCredentials(ctx context.Context, tx store.Tx, operatorID string, c operators.Credentials, now time.Time) error {
	cur, err := tx.OperatorConfigGet(ctx, operatorID)
	if err != nil {
		return err
	}
	next := *cur
	if c.IsAnonymous() {
		next.CredentialsCiphertext, next.KeyID = nil, ""
	} else {
		if s.sealer == nil {
			return errNoSealer
		}
		if next.CredentialsCiphertext, next.KeyID, err = sourceauth.Seal(s.sealer, operatorID, c); err != nil {
			return err
		}
	}
	_, err = tx.OperatorConfigSet(ctx, &store.OperatorConfigSetParams{OperatorConfig: next, Now: now})
	return err
}

// credentialsOf opens the operator's stored credentials.
func (s *Server) credentialsOf(ctx context.Context, operatorID string) (operators.Credentials, error) {
	cfg, err := s.store.OperatorConfigGet(ctx, operatorID)
	if err != nil {
		return operators.Credentials{}, err
	}
	return sourceauth.Open(s.sealer, cfg)
}
