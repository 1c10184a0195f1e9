// Package designtest compares JSON the manager writes with the examples of the design
// (operator-manager-spec.md) that tests keep in testdata: every key the example has is there,
// with a value of the same JSON type (string, number, boolean, null, array, object), at every
// depth. Keys the example does not have are allowed beside them. For tests only.
package designtest

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
)

// Load reads the JSON example at path (a testdata file) as a generic value.
func Load(tb testing.TB, path string) any {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return v
}

// Generic decodes JSON text, or re-encodes a Go value, into the generic form Types compares.
func Generic(tb testing.TB, v any) any {
	tb.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			tb.Fatal(err)
		}
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		tb.Fatalf("%s: %v", data, err)
	}
	return out
}

// TypeOf is the JSON type of a generic value: string, number, boolean, null, array or object.
func TypeOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Types lists where got differs from the example: a key of the example missing from got, or a
// value of another JSON type. Arrays: every element of got is compared with the example's first
// element. Both are generic values (Load, Generic). Nothing listed means got has the example's
// shape.
func Types(example, got any) []string {
	var out []string
	compare("$", example, got, &out)
	return out
}

func compare(path string, example, got any, out *[]string) {
	if te, tg := TypeOf(example), TypeOf(got); te != tg {
		*out = append(*out, fmt.Sprintf("%s: %s, the design has %s", path, tg, te))
		return
	}
	switch e := example.(type) {
	case map[string]any:
		g := got.(map[string]any)
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v, ok := g[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			compare(path+"."+k, e[k], v, out)
		}
	case []any:
		if len(e) == 0 {
			return
		}
		for i, v := range got.([]any) {
			compare(fmt.Sprintf("%s[%d]", path, i), e[0], v, out)
		}
	}
}

// Keys are an object's keys, sorted.
func Keys(v any) []string {
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
