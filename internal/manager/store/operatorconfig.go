package store

import (
	"context"
	"encoding/json"
	"time"
)

// OperatorConfig is what an operator keeps beside its chart source: the source's credentials,
// sealed (never in clear text in the store), and its default Helm values.
type OperatorConfig struct {
	OperatorID string
	// CredentialsCiphertext is the chart source's credentials sealed by KeyID; nil for an
	// anonymous source.
	CredentialsCiphertext []byte
	KeyID                 string
	// DefaultValues is a JSON object of Helm values merged under each deployment's values; nil
	// for none.
	DefaultValues json.RawMessage
}

// OperatorConfigSetParams replaces an operator's config (all of it) and its UpdatedAt.
type OperatorConfigSetParams struct {
	OperatorConfig
	Now time.Time
}

// OperatorConfigExecutor reads and writes operators' credentials and default values.
type OperatorConfigExecutor interface {
	// OperatorConfigGet is the config of the operator with id; ErrNotFound when there is none.
	OperatorConfigGet(ctx context.Context, operatorID string) (*OperatorConfig, error)
	// OperatorConfigSet replaces it; ErrNotFound when the operator is unknown.
	OperatorConfigSet(ctx context.Context, p *OperatorConfigSetParams) (*OperatorConfig, error)
	// OperatorConfigListSealed lists every operator with sealed credentials, deleted ones too.
	OperatorConfigListSealed(ctx context.Context) ([]*OperatorConfig, error)
}
