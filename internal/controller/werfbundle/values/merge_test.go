package values

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// y parses a YAML mapping for a test.
func y(t testing.TB, doc string) map[string]any {
	t.Helper()
	v, reason := parse([]byte(doc))
	if reason != "" {
		t.Fatalf("parse(%q): %s", doc, reason)
	}
	return v
}

func TestMerge_HelmSemantics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers []string
		want   string
	}{
		{"no layers", nil, "{}"},
		{"one layer", []string{"a: 1"}, "a: 1"},
		{"later scalar wins", []string{"a: 1\nb: 2", "a: 3"}, "a: 3\nb: 2"},
		{"nested maps merge", []string{"image: {repo: r, tag: v1}", "image: {tag: v2}"}, "image: {repo: r, tag: v2}"},
		{"deep merge", []string{"a: {b: {c: 1, d: 2}}", "a: {b: {d: 3, e: 4}}"}, "a: {b: {c: 1, d: 3, e: 4}}"},
		{"lists replace", []string{"l: [1, 2, 3]", "l: [4]"}, "l: [4]"},
		{"empty list replaces", []string{"l: [1]", "l: []"}, "l: []"},
		{"map replaces scalar", []string{"a: x", "a: {b: 1}"}, "a: {b: 1}"},
		{"scalar replaces map", []string{"a: {b: 1}", "a: x"}, "a: x"},
		{"list replaces map", []string{"a: {b: 1}", "a: [1]"}, "a: [1]"},
		{"empty map keeps map", []string{"a: {b: 1}", "a: {}"}, "a: {b: 1}"},
		{"null deletes", []string{"a: 1\nb: 2", "a: null"}, "b: 2"},
		{"nested null deletes", []string{"a: {b: 1, c: 2}", "a: {b: ~}"}, "a: {c: 2}"},
		{"null deletes a map", []string{"a: {b: 1}\nc: 1", "a: null"}, "c: 1"},
		{"null for an absent key", []string{"a: 1", "z: null"}, "a: 1"},
		{"null in the first layer", []string{"a: null\nb: {c: null, d: 1}"}, "b: {d: 1}"},
		{"key set again after delete", []string{"a: 1", "a: null", "a: {b: 2}"}, "a: {b: 2}"},
		{"nulls inside lists stay", []string{"l: [1, null, {a: null}]"}, "l: [1, null, {a: null}]"},
		{"three layers", []string{"a: 1\nb: 1\nc: 1", "b: 2\nc: 2", "c: 3"}, "a: 1\nb: 2\nc: 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layers := make([]map[string]any, len(tc.layers))
			for i, l := range tc.layers {
				layers[i] = y(t, l)
			}
			got := Merge(layers...)
			if want := y(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("Merge = %#v\n want %#v", got, want)
			}
		})
	}
}

func TestMerge_NilLayersAreEmpty(t *testing.T) {
	got := Merge(nil, map[string]any{"a": "x"}, nil)
	if !reflect.DeepEqual(got, map[string]any{"a": "x"}) {
		t.Errorf("Merge = %#v", got)
	}
}

func TestMerge_LeavesInputsAloneAndSharesNothing(t *testing.T) {
	a := y(t, "image: {repo: r, tag: v1}\nlist: [1, {x: 1}]\ngone: 1\nkeep: {n: null}")
	b := y(t, "image: {tag: v2, extra: {deep: 1}}\ngone: null\nnewmap: {m: [1]}")
	aBefore, bBefore := copyValue(a), copyValue(b)

	got := Merge(a, b)
	if !reflect.DeepEqual(a, aBefore) || !reflect.DeepEqual(b, bBefore) {
		t.Fatal("Merge modified its inputs")
	}
	// Changing the result must not reach the inputs either.
	got["image"].(map[string]any)["repo"] = "changed"
	got["image"].(map[string]any)["extra"].(map[string]any)["deep"] = "changed"
	got["list"].([]any)[1].(map[string]any)["x"] = "changed"
	got["newmap"].(map[string]any)["m"].([]any)[0] = "changed"
	got["keep"].(map[string]any)["n"] = "changed"
	if !reflect.DeepEqual(a, aBefore) || !reflect.DeepEqual(b, bBefore) {
		t.Fatal("the result shares a mapping or list with an input")
	}
}

func TestRender_SortedDeterministicYAML(t *testing.T) {
	v := y(t, `
zeta: 1
alpha:
  yes_string: "yes"
  date: "2024-01-02"
  num: 1000000
  big: 12345678901234567890
  float: 1.5
  list: [b, a]
  nested: {z: 1, a: 2}
"10": ten
"9": nine
empty: {}
`)
	out, hash, err := Render(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `"9": nine
"10": ten
alpha:
  big: 12345678901234567890
  date: "2024-01-02"
  float: 1.5
  list:
  - b
  - a
  nested:
    a: 2
    z: 1
  num: 1000000
  yes_string: "yes"
empty: {}
zeta: 1
`
	if string(out) != want {
		t.Errorf("Render =\n%s\nwant\n%s", out, want)
	}
	sum := sha256.Sum256(out)
	if hash != hex.EncodeToString(sum[:]) {
		t.Errorf("hash %s is not the sha256 of the YAML", hash)
	}
	// The same values built in another order render the same.
	again := map[string]any{}
	for _, k := range []string{"empty", "10", "zeta", "9", "alpha"} {
		again[k] = copyValue(v[k])
	}
	if _, hash2, _ := Render(again); hash2 != hash {
		t.Errorf("equal values rendered with different hashes")
	}
	// And what it renders reads back as the same values.
	back, reason := parse(out)
	if reason != "" || !reflect.DeepEqual(back, v) {
		t.Errorf("round trip = %#v (%s)\n want %#v", back, reason, v)
	}
}

func TestRender_EmptyValues(t *testing.T) {
	for _, v := range []map[string]any{nil, {}} {
		out, hash, err := Render(v)
		if err != nil || string(out) != "{}\n" || len(hash) != 64 {
			t.Errorf("Render(%#v) = %q, %q, %v", v, out, hash, err)
		}
	}
}

func TestRender_DifferentValuesDifferentHash(t *testing.T) {
	_, h1, _ := Render(map[string]any{"a": "1"})
	_, h2, _ := Render(map[string]any{"a": json.Number("1")})
	_, h3, _ := Render(map[string]any{"a": "2"})
	if h1 == h2 || h1 == h3 || h2 == h3 {
		t.Errorf("hashes collide: %s %s %s", h1, h2, h3)
	}
}

func TestRender_UnsupportedValuesFailWithoutRepeatingThem(t *testing.T) {
	for _, v := range []map[string]any{
		{"password": secret, "x": math.NaN()},
		{"password": secret, "x": math.Inf(1)},
		{"password": secret, "x": func() {}},
		{"password": secret, "x": []any{make(chan string)}},
	} {
		_, _, err := Render(v)
		if err == nil {
			t.Errorf("Render(%#v) succeeded", v)
			continue
		}
		if !strings.HasPrefix(err.Error(), "rendering values: ") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Render error = %q", err)
		}
	}
}

func TestRender_KeysUpToTheLimitRender(t *testing.T) {
	for _, unit := range []string{"a", "é", "\u2028", `"`, `\`, "&", "<a", "\x01", "\n", "\x7f", "\u0085", "\uffff", "\xff"} {
		for n := 1; n < 1100; n++ {
			k := strings.Repeat(unit, n)
			_, _, err := Render(map[string]any{"a": map[string]any{k: "v"}})
			fits := jsonKeyLength(k) <= MaxKeyLength
			if fits != (err == nil) {
				t.Fatalf("key of %d × %q (JSON length %d): Render error %v", n, unit, jsonKeyLength(k), err)
			}
			if !fits {
				if !strings.Contains(err.Error(), "is too long") {
					t.Errorf("error %q", err)
				}
				break
			}
		}
	}
}

func TestJSONKeyLength_NeverUnderestimates(t *testing.T) {
	for _, k := range []string{"", "a", strings.Repeat("a", 300), strings.Repeat("\"\\\n\x01\x7f\u0085\u2028é&<>\xff", 30)} {
		j, _ := encodeJSON(k)
		if got, min := jsonKeyLength(k), utf8.RuneCount(bytes.TrimSpace(j)); got < min {
			t.Errorf("jsonKeyLength(%.20q) = %d, JSON has %d characters", k, got, min)
		}
	}
}

func TestRender_RejectsMergeKey(t *testing.T) {
	_, _, err := Render(map[string]any{"a": []any{map[string]any{"<<": "x"}}})
	if err == nil || !strings.Contains(err.Error(), "merge key") {
		t.Errorf("err = %v", err)
	}
}

func TestRender_RejectsDeepNesting(t *testing.T) {
	var v any = "leaf"
	for range MaxDepth {
		v = map[string]any{"a": v}
	}
	if _, _, err := Render(v.(map[string]any)); err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	_, _, err := Render(map[string]any{"a": v})
	if err == nil || !strings.Contains(err.Error(), "nest deeper than 64 levels") {
		t.Errorf("%d levels: err = %v", MaxDepth+1, err)
	}
}
