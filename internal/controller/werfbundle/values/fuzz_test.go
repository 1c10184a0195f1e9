package values

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// FuzzMerge merges random YAML mappings. Merge must not panic or change its inputs, merging
// with nothing must give the input less its nulls, the later layer must win for every key it
// sets to a non-mapping, applying the later layer again must change nothing, and Render must be
// deterministic and read back as the same values.
func FuzzMerge(f *testing.F) {
	f.Add("a: 1\nb: {c: 2, d: [1, 2]}", "b: {c: 3}\nd: null")
	f.Add("image: {repo: r, tag: v1}\nreplicas: 2", "image: {tag: v2}\nreplicas: null")
	f.Add("a: {b: {c: {d: 1}}}", "a: {b: x}")
	f.Add("a: x", "a: {b: null, c: [null]}")
	f.Add("l: [1, {a: null}]\nn: ~", "l: []\n\"1\": yes")
	f.Add("big: 12345678901234567890\nf: 1e21\ns: \"0x10\"", "f: 0.1\nt: 2024-01-02T10:00:00Z")
	f.Fuzz(func(t *testing.T, docA, docB string) {
		a, reason := parse([]byte(docA))
		if reason != "" {
			return
		}
		b, reason := parse([]byte(docB))
		if reason != "" {
			return
		}
		aBefore, bBefore := copyValue(a), copyValue(b)

		m := Merge(a, b)
		if !reflect.DeepEqual(a, aBefore) || !reflect.DeepEqual(b, bBefore) {
			t.Fatal("Merge modified its inputs")
		}

		clean := withoutNulls(a).(map[string]any)
		for _, got := range []map[string]any{Merge(a), Merge(a, map[string]any{}), Merge(map[string]any{}, a), Merge(nil, a, nil)} {
			if !reflect.DeepEqual(got, clean) {
				t.Fatalf("merging with nothing = %#v, want %#v", got, clean)
			}
		}

		for k, bv := range b {
			mv, present := m[k]
			switch bv := bv.(type) {
			case nil:
				if present {
					t.Fatalf("key %q set to null in the later layer survived", k)
				}
			case map[string]any:
				if _, ok := mv.(map[string]any); !ok {
					t.Fatalf("key %q: a mapping in the later layer gave %T", k, mv)
				}
			default:
				if !reflect.DeepEqual(mv, bv) {
					t.Fatalf("key %q: later layer's %#v did not win, got %#v", k, bv, mv)
				}
			}
		}
		for k, av := range a {
			if _, inB := b[k]; !inB && av != nil && !reflect.DeepEqual(m[k], withoutNulls(av)) {
				t.Fatalf("key %q only in the earlier layer changed: %#v", k, m[k])
			}
		}
		if again := Merge(m, b); !reflect.DeepEqual(again, m) {
			t.Fatal("applying the later layer again changed the result")
		}

		out1, hash1, err := Render(m)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		out2, hash2, err := Render(copyValue(m).(map[string]any))
		if err != nil || hash1 != hash2 || string(out1) != string(out2) {
			t.Fatalf("Render is not deterministic:\n%s\n%s", out1, out2)
		}
		back, reason := parse(out1)
		if reason != "" {
			t.Fatalf("rendered YAML does not parse (%s):\n%s", reason, out1)
		}
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("rendered YAML reads back as %#v, want %#v\n%s", back, m, out1)
		}
	})
}

// withoutNulls is the reference for what Merge keeps of a single layer: mappings without null
// entries, at any depth outside lists.
func withoutNulls(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, e := range m {
		if e != nil {
			out[k] = withoutNulls(e)
		}
	}
	return out
}

// safeReason is every reason FromSource may give, as templates without room for content.
var safeReason = regexp.MustCompile(`^(` +
	`not found` +
	`|key is not UTF-8 text` +
	`|value is not UTF-8 text; name a key holding a YAML document instead` +
	`|document is [0-9]+ bytes, over the limit of 1048576 \(1 MiB\)` +
	`|holds [0-9]+ YAML documents \(separated by ---\), want a single mapping` +
	`|document is a YAML (list|string|boolean|number), want a mapping` +
	`|document is not a YAML mapping` +
	`|a mapping key of [0-9]+ bytes is too long \(at most 1024 characters, escapes counted\)` +
	`|a mapping key is "<<", which YAML would read as a merge key` +
	`|values nest deeper than 64 levels` +
	`|invalid YAML: (line [0-9]+: )?(.*)` +
	`)$`)

func reasonIsSafe(reason string) bool {
	m := safeReason.FindStringSubmatch(reason)
	if m == nil {
		return false
	}
	problem := m[len(m)-1]
	if !strings.HasPrefix(reason, "invalid YAML: ") {
		return true
	}
	if yamlProblems[problem] {
		return true
	}
	for _, p := range yamlProblemPrefixes {
		if problem == p.problem {
			return true
		}
	}
	switch problem {
	case "a number is NaN or infinite", "a mapping key is null or not a scalar", "malformed YAML":
		return true
	}
	return false
}

// FuzzFromSource reads random data. FromSource must not panic; an error must be a *SourceError
// naming the source and the key, matching ErrKeyNotFound or ErrInvalid, whose reason is one of
// the fixed templates (so it cannot carry content); values it returns must render and read back
// unchanged.
func FuzzFromSource(f *testing.F) {
	f.Add(false, "values.yaml", []byte("a: 1\nb: [x]\n"), "other", []byte("ignored"))
	f.Add(true, "prod.yaml", []byte("password: hunter2\n  bad: indent\n"), "", []byte(""))
	f.Add(false, "token", []byte("hunter2"), "ca.crt", []byte("-----BEGIN CERTIFICATE-----\n"))
	f.Add(false, "blob", []byte{0xff, 0xfe, 0x00}, "x", []byte("y"))
	f.Add(true, "v", []byte("a: 1\n---\nb: 2\n"), "w", []byte(""))
	f.Add(true, "v", []byte("? [k]\n: v\n~: x\nn: .nan\n"), "w", []byte(""))
	f.Add(true, "v", []byte("a: &x [*x]\nb: !!int nope\n"), "w", []byte(""))
	f.Fuzz(func(t *testing.T, named bool, key string, content []byte, otherKey string, otherValue []byte) {
		s := Source{Kind: "Secret", Namespace: "ns", Name: "src", Data: map[string][]byte{otherKey: otherValue, key: content}}
		if named {
			s.Key = key
		}
		v, err := FromSource(s)
		if err != nil {
			var se *SourceError
			if !errors.As(err, &se) {
				t.Fatalf("error %q is a %T, want *SourceError", err, err)
			}
			if se.Source != "Secret ns/src" || !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrKeyNotFound) {
				t.Fatalf("error %q does not name the source or match a sentinel", err)
			}
			if !reasonIsSafe(se.Reason) {
				t.Fatalf("reason %q is not one of the fixed templates", se.Reason)
			}
			return
		}
		out, _, err := Render(v)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		back, reason := parse(out)
		if reason != "" || !reflect.DeepEqual(back, v) {
			t.Fatalf("values %#v rendered as\n%s\nread back as %#v (%s)", v, out, back, reason)
		}
	})
}
