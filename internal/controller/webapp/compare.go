package webapp

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// toMap is the JSON form of an object or apply configuration, the form both sides are compared in
// (numbers are float64 on both).
func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// firstDifference returns the path of the first field that want sets and have lacks or holds with
// another value, or "" when have already holds all of want. Fields only have sets (defaults the
// API server filled in, fields other managers own, status) do not count: that is what a
// server-side apply of want would leave alone too.
//
// Lists are compared element by element: an element with a "name" (containers, env, ports,
// owner references, pull secrets) is matched with the element of the same name, other maps by
// position, scalars by membership. An empty string, map or list in want matches an absent field in
// have (the typed API omits them); false and 0 do not, as pointers keep them.
func firstDifference(want, have any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		h, _ := have.(map[string]any)
		if h == nil && have != nil {
			return path
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if p := firstDifference(w[k], h[k], path+"."+k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		h, _ := have.([]any)
		if h == nil && have != nil {
			return path
		}
		for i, we := range w {
			if p := firstDifference(we, element(we, h, i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	default:
		if have == nil && isZero(want) {
			return ""
		}
		if !reflect.DeepEqual(want, have) {
			return path
		}
		return ""
	}
}

// element finds the element of have that corresponds to want, the i-th element of its list.
func element(want any, have []any, i int) any {
	switch w := want.(type) {
	case map[string]any:
		if name, ok := w["name"].(string); ok {
			for _, h := range have {
				if hm, ok := h.(map[string]any); ok && hm["name"] == name {
					return h
				}
			}
			return nil
		}
		if i < len(have) {
			return have[i]
		}
		return nil
	default:
		for _, h := range have {
			if reflect.DeepEqual(w, h) {
				return h
			}
		}
		return nil
	}
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}
