package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// Strategy is how a deployment moves through its clusters.
type Strategy string

const (
	StrategyCanary    Strategy = "Canary"
	StrategyBlueGreen Strategy = "BlueGreen"
	StrategyRolling   Strategy = "Rolling"
	StrategyDirect    Strategy = "Direct"
)

// Strategies are the known strategies, in the order the docs list them.
var Strategies = []Strategy{StrategyCanary, StrategyBlueGreen, StrategyRolling, StrategyDirect}

// Valid reports whether s is one of Strategies (exact spelling).
func (s Strategy) Valid() bool {
	for _, v := range Strategies {
		if s == v {
			return true
		}
	}
	return false
}

// DeploymentRequest is the body of POST /api/v1/deployments. Targets are Clusters (by name) or
// Environments (every registered cluster in them), never both. Values are Helm values (a JSON
// object); ValuesByEnvironment overrides them per environment (see ValuesFor). Exactly the config
// of Strategy may be present; an omitted one takes the defaults its Resolve method documents.
type DeploymentRequest struct {
	Operator            string                     `json:"operator"`
	Version             string                     `json:"version"`
	Clusters            []string                   `json:"clusters,omitempty"`
	Environments        []string                   `json:"environments,omitempty"`
	Values              json.RawMessage            `json:"values,omitempty"`
	ValuesByEnvironment map[string]json.RawMessage `json:"valuesByEnvironment,omitempty"`
	Strategy            Strategy                   `json:"strategy"`
	CanaryConfig        *CanaryConfig              `json:"canaryConfig,omitempty"`
	BlueGreenConfig     *BlueGreenConfig           `json:"blueGreenConfig,omitempty"`
	RollingConfig       *RollingConfig             `json:"rollingConfig,omitempty"`
	DirectConfig        *DirectConfig              `json:"directConfig,omitempty"`
	// BakeWindow is how long after the deployment completes it is still watched as the one
	// that changed its clusters (an ISO 8601 duration, "PT0S" none); left out, the manager's
	// default (--bake-window).
	BakeWindow string `json:"bakeWindow,omitempty" description:"how long after it completes the deployment is still watched as its clusters' change (ISO 8601 such as PT15M; PT0S: none); left out: the manager's --bake-window"`
	// Analyses are PromQL analyses run in each stage's hold (stored templates or inline).
	Analyses []AnalysisRef `json:"analyses,omitempty"`
}

// MaxBody is the largest request body Decode reads (values included).
const MaxBody = 1 << 20

// DecodeDeploymentRequest reads a request body strictly: one JSON object, no unknown fields, nothing after it. A
// bad body is an *invalid.Error naming the field where it can (the JSON path of a wrong type, the
// unknown field). Decode does not validate: call Validate.
func DecodeDeploymentRequest(body []byte) (*DeploymentRequest, error) {
	if len(body) > MaxBody {
		return nil, &invalid.Error{Reason: "tooLarge", Message: fmt.Sprintf("the request body is larger than %d bytes", MaxBody)}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &invalid.Error{Reason: "required", Message: "the request body is empty: send a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r DeploymentRequest
	if err := dec.Decode(&r); err != nil {
		return nil, decodeError(err, body)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &invalid.Error{Reason: "format", Message: "unexpected data after the JSON object"}
	}
	return &r, nil
}

func decodeError(err error, body []byte) error {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		return invalid.Reasoned("", "format", err, "malformed JSON at byte %d", syntaxErr.Offset)
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return invalid.Reasoned("", "format", err, "the body must be a JSON object, not %s", typeErr.Value)
		}
		return invalid.Reasoned(typeErr.Field, "format", err, "must be %s, not %s", typeName(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalid.Reasoned("", "format", err, "the JSON object is incomplete")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = unknownFieldPath(body, strings.Trim(name, `"`))
		return invalid.Reasoned(name, "unknown", err, "unknown field %q", name)
	}
	return invalid.Reasoned("", "format", err, "the body is not a valid deployment request")
}

func typeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "bool":
		return "true or false"
	case "float64", "int", "int64":
		return "a number"
	}
	return kind
}

// unknownFieldPath finds the JSON path of the unknown field name (encoding/json reports only
// the name): a top-level key, or a key inside one of the strategy configs.
func unknownFieldPath(body []byte, name string) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return name
	}
	request := fieldsOf(reflect.TypeFor[DeploymentRequest]())
	for _, key := range slices.Sorted(maps.Keys(top)) {
		if key == name && !knownField(request, key) {
			return name
		}
	}
	for _, key := range slices.Sorted(maps.Keys(top)) {
		if !knownField(request, key) || !strings.HasSuffix(strings.ToLower(key), "config") {
			continue
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(top[key], &inner) != nil {
			continue
		}
		f, _ := reflect.TypeFor[DeploymentRequest]().FieldByNameFunc(func(n string) bool { return strings.EqualFold(n, key) })
		if f.Type == nil {
			continue
		}
		if _, ok := inner[name]; ok && !knownField(fieldsOf(f.Type.Elem()), name) {
			return jsonName(f) + "." + name
		}
	}
	return name
}

func fieldsOf(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		out = append(out, jsonName(f))
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// knownField matches as encoding/json does: exactly, or else without regard to case.
func knownField(fields []string, key string) bool {
	for _, f := range fields {
		if strings.EqualFold(f, key) {
			return true
		}
	}
	return false
}

// ConfigJSON is the config of r.Strategy as JSON, as the store keeps it (store.Deployment.Config):
// the object the request gave, or {} when it gave none. With SetConfigJSON it rebuilds the request
// from a stored deployment, so the engine can re-plan it on any replica (plans are deterministic).
func (r *DeploymentRequest) ConfigJSON() (json.RawMessage, error) {
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
func (r *DeploymentRequest) SetConfigJSON(raw json.RawMessage) error {
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
