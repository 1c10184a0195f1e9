package request

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ConfigJSON is the config of r.Strategy as JSON, as the store keeps it (store.Deployment.Config):
// the object the request gave, or {} when it gave none. With SetConfigJSON it rebuilds the request
// from a stored deployment, so the engine can re-plan it on any replica (plans are deterministic).
func (r *Request) ConfigJSON() (json.RawMessage, error) {
	var v any
	switch r.Strategy {
	case StrategyCanary:
		v = r.CanaryConfig
	case StrategyBlueGreen:
		v = r.BlueGreenConfig
	case StrategyRolling:
		v = r.RollingConfig
	case StrategyDirect:
		v = r.DirectConfig
	default:
		return nil, fmt.Errorf("unknown strategy %q", r.Strategy)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		b = []byte("{}")
	}
	return b, nil
}

// SetConfigJSON sets the config of r.Strategy from raw (ConfigJSON's output; empty or null is no
// config), strictly, and clears the others.
func (r *Request) SetConfigJSON(raw json.RawMessage) error {
	r.CanaryConfig, r.BlueGreenConfig, r.RollingConfig, r.DirectConfig = nil, nil, nil, nil
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	switch r.Strategy {
	case StrategyCanary:
		r.CanaryConfig = &CanaryConfig{}
		v = r.CanaryConfig
	case StrategyBlueGreen:
		r.BlueGreenConfig = &BlueGreenConfig{}
		v = r.BlueGreenConfig
	case StrategyRolling:
		r.RollingConfig = &RollingConfig{}
		v = r.RollingConfig
	case StrategyDirect:
		r.DirectConfig = &DirectConfig{}
		v = r.DirectConfig
	default:
		return fmt.Errorf("unknown strategy %q", r.Strategy)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s config: %w", r.Strategy, err)
	}
	return nil
}
