package request

import (
	"encoding/json"
	"fmt"
)

// ValuesFor returns the Helm values for clusters of env: values, with valuesByEnvironment[env]
// merged over them as Helm merges a second values file (objects merge key by key, recursively;
// anything else replaces; a null removes the key). Numbers decode as float64, as Helm reads a
// values file.
func (s *Spec) ValuesFor(env string) (map[string]any, error) {
	base, err := decodeObject(s.Values)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	over, err := decodeObject(s.ValuesByEnvironment[env])
	if err != nil {
		return nil, fmt.Errorf("valuesByEnvironment.%s: %w", env, err)
	}
	return merge(base, over), nil
}

func decodeObject(raw json.RawMessage) (map[string]any, error) {
	m := map[string]any{}
	if len(raw) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil { // null
		m = map[string]any{}
	}
	return m, nil
}

// merge writes over into base (which it owns) and returns it.
func merge(base, over map[string]any) map[string]any {
	for k, v := range over {
		if v == nil {
			delete(base, k)
			continue
		}
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = merge(bm, vm)
				continue
			}
			base[k] = merge(map[string]any{}, vm) // drop the nulls inside it too
			continue
		}
		base[k] = v
	}
	return base
}

// WithDefaults merges values over an operator's default values (a JSON object; empty or null:
// none) as ValuesFor merges an environment's values: the deployment's values win.
func WithDefaults(defaults json.RawMessage, values map[string]any) (map[string]any, error) {
	base, err := decodeObject(defaults)
	if err != nil {
		return nil, fmt.Errorf("the operator's default values: %w", err)
	}
	return merge(base, values), nil
}
