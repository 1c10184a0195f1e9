package values

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func configMap(data map[string]string, key string) Source {
	d := make(map[string][]byte, len(data))
	for k, v := range data {
		d[k] = []byte(v)
	}
	return Source{Kind: "ConfigMap", Namespace: "team-a", Name: "app-values", Key: key, Data: d}
}

func TestFromSource_ReadsTheRightKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
		key  string
		want map[string]any
	}{
		{
			name: "named key parsed as YAML",
			data: map[string]string{"prod.yaml": "replicas: 3\nimage:\n  tag: v1\n", "other": "x: 1"},
			key:  "prod.yaml",
			want: map[string]any{"replicas": json.Number("3"), "image": map[string]any{"tag": "v1"}},
		},
		{
			name: "values.yaml used by default and other keys ignored",
			data: map[string]string{"values.yaml": "a: b", "ignored": "zzz"},
			want: map[string]any{"a": "b"},
		},
		{
			name: "without values.yaml every key is a string value",
			data: map[string]string{"replicas": "3", "config.json": `{"a": 1}`, "empty": ""},
			want: map[string]any{"replicas": "3", "config.json": `{"a": 1}`, "empty": ""},
		},
		{name: "no data gives no values", data: nil, want: map[string]any{}},
		{name: "empty document", data: map[string]string{"v": ""}, key: "v", want: map[string]any{}},
		{name: "null document", data: map[string]string{"v": "null\n"}, key: "v", want: map[string]any{}},
		{name: "comments only", data: map[string]string{"v": "# nothing yet\n"}, key: "v", want: map[string]any{}},
		{name: "leading document marker", data: map[string]string{"v": "---\na: 1\n"}, key: "v", want: map[string]any{"a": json.Number("1")}},
		{name: "trailing document markers", data: map[string]string{"v": "a: 1\n---\n...\n"}, key: "v", want: map[string]any{"a": json.Number("1")}},
		{name: "content on the marker line", data: map[string]string{"v": "--- {a: 1}\n"}, key: "v", want: map[string]any{"a": json.Number("1")}},
		{name: "JSON is YAML", data: map[string]string{"v": `{"a": [1, "x"], "b": null}`}, key: "v", want: map[string]any{"a": []any{json.Number("1"), "x"}, "b": nil}},
		{
			name: "integers keep every digit",
			data: map[string]string{"v": "big: 12345678901234567890\nmillion: 1000000\n"},
			key:  "v",
			want: map[string]any{"big": json.Number("12345678901234567890"), "million": json.Number("1000000")},
		},
		{
			name: "YAML 1.1 scalars and non-string keys",
			data: map[string]string{"v": "on: yes\n1: one\ndate: 2024-01-02\n"},
			key:  "v",
			want: map[string]any{"true": true, "1": "one", "date": "2024-01-02"},
		},
		{name: "anchors and merge keys", data: map[string]string{"v": "base: &b {x: 1}\nother:\n  <<: *b\n  z: 2\n"}, key: "v",
			want: map[string]any{"base": map[string]any{"x": json.Number("1")}, "other": map[string]any{"x": json.Number("1"), "z": json.Number("2")}}},
		{name: "duplicate keys: last wins as in Helm", data: map[string]string{"v": "a: 1\na: 2\n"}, key: "v", want: map[string]any{"a": json.Number("2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromSource(configMap(tc.data, tc.key))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FromSource = %#v\n want %#v", got, tc.want)
			}
		})
	}
}

func TestFromSource_MissingKeyNamesTheSource(t *testing.T) {
	s := Source{Kind: "Secret", Namespace: "team-a", Name: "db", Key: "prod.yaml",
		Data: map[string][]byte{"values.yaml": []byte("password: hunter2")}}
	_, err := FromSource(s)
	if !errors.Is(err, ErrKeyNotFound) || errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrKeyNotFound", err)
	}
	if want := `Secret team-a/db: key "prod.yaml": not found`; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestFromSource_RejectsUnusableContent(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"list", "- a\n- b\n", `ConfigMap team-a/app-values: key "v": document is a YAML list, want a mapping`},
		{"string", "just text", "document is a YAML string, want a mapping"},
		{"number", "42", "document is a YAML number, want a mapping"},
		{"boolean", "true", "document is a YAML boolean, want a mapping"},
		{"two documents", "a: 1\n---\nb: 2\n", "holds 2 YAML documents (separated by ---), want a single mapping"},
		{"three documents", "a: 1\n--- # next\nb: 2\n...\n---\nc: 3", "holds 3 YAML documents"},
		{"bad indentation", "a: b\n  c: d\n", `key "v": invalid YAML: line 2: mapping values are not allowed in this context`},
		{"unclosed flow", "a: [1, 2\n", "invalid YAML: line 1: did not find expected ',' or ']'"},
		{"tab indentation", "a:\n\t- b\n", "invalid YAML: line 2: found character that cannot start any token"},
		{"NaN", "a: .nan\n", "invalid YAML: a number is NaN or infinite"},
		{"null key", "~: x\n", "invalid YAML: a mapping key is null or not a scalar"},
		{"list key", "? [a]\n: b\n", "invalid YAML: a mapping key is a list or mapping"},
		{"unknown anchor", "a: *nope\n", "invalid YAML: an alias refers to an unknown anchor"},
		{"too deep for the parser", strings.Repeat("[", 10001), "invalid YAML: nested too deeply"},
		{"too deep", "a: " + strings.Repeat("{a: ", 64) + "1" + strings.Repeat("}", 64), "values nest deeper than 64 levels"},
		{"too deep in a list", "a: " + strings.Repeat("[", 64) + strings.Repeat("]", 64), "values nest deeper than 64 levels"},
		{"invalid UTF-8", "a: \xff\n", "invalid YAML: invalid leading UTF-8 octet"},
		{"quoted merge key", "\"<<\": {a: 1}\n", `a mapping key is "<<", which YAML would read as a merge key`},
		{"key too long", "? " + strings.Repeat("k", 1023) + "\n: v\n", "a mapping key of 1023 bytes is too long (at most 1024 characters, escapes counted)"},
		{"too large", "a: " + strings.Repeat("x", MaxDocumentSize), "document is 1048579 bytes, over the limit of 1048576 (1 MiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromSource(configMap(map[string]string{"v": tc.doc}, "v"))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q\n want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestFromSource_AcceptsDeepestNesting(t *testing.T) {
	for _, doc := range []string{
		"a: " + strings.Repeat("{a: ", 63) + "1" + strings.Repeat("}", 63),
		"a: " + strings.Repeat("[", 63) + strings.Repeat("]", 63),
	} {
		v, err := FromSource(configMap(map[string]string{"v": doc}, "v"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Render(v); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFromSource_AcceptsLongestKey(t *testing.T) {
	v, err := FromSource(configMap(map[string]string{"v": "? " + strings.Repeat("k", 1022) + "\n: v\n"}, "v"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Render(v); err != nil {
		t.Fatal(err)
	}
}

func TestFromSource_AcceptsDocumentOfExactlyTheLimit(t *testing.T) {
	doc := "a: " + strings.Repeat("x", MaxDocumentSize-3)
	got, err := FromSource(configMap(map[string]string{"v": doc}, "v"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got["a"].(string)) != MaxDocumentSize-3 {
		t.Errorf("value truncated")
	}
}

func TestFromSource_RejectsBinaryValuesWithoutKey(t *testing.T) {
	s := Source{Kind: "Secret", Name: "blob", Data: map[string][]byte{"cert.der": {0x30, 0x82, 0xff, 0xfe}}}
	_, err := FromSource(s)
	if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), `Secret blob: key "cert.der": value is not UTF-8 text`) {
		t.Fatalf("err = %v", err)
	}
}

// secret is a value that must never show in an error.
const secret = "hunter2-s3cr3t"

func TestFromSource_ErrorsNeverContainValues(t *testing.T) {
	docs := []string{
		"password: " + secret + "\n  nested: oops\n",
		"password: \"" + secret + "\n",
		"password: '" + secret,
		"password: [" + secret + ", {",
		"password: {" + secret + ": [}",
		"- " + secret + "\n- x\n",
		secret,
		"password: *" + secret + "\n",
		"password: &" + secret + " [*" + secret + "]\n",
		"password: !!int " + secret + "\n",
		"password: !!float " + secret + "\n",
		"password: !!binary " + secret + "!\n",
		"~: " + secret + "\n",
		"? [" + secret + "]\n: " + secret + "\n",
		"? {" + secret + ": 1}\n: x\n",
		"? ~\n: " + secret + "\n",
		"<<: " + secret + "\n",
		"password: \"\\q" + secret + "\"\n",
		"password: " + secret + "\x01\n",
		"password: " + secret + "\xc3\n",
		"password: " + secret + "\n---\nother: " + secret + "\n",
		"--- " + secret + "\n",
		"%YAML 9.9\n--- " + secret + "\n",
		"password: !" + secret + "! x\n",
		"password: |" + secret + "\n  x\n",
		"a: .inf\nsecret: " + secret + "\n",
		"password:\t" + secret + "\n\t\tx: y\n",
		"password: `" + secret + "`\n",
		"password: @" + secret + "\n",
		"password: " + secret + "\n" + strings.Repeat(" ", MaxDocumentSize),
	}
	for _, doc := range docs {
		for _, key := range []string{"v", ""} {
			data := map[string]string{"v": doc}
			if key == "" {
				data = map[string]string{DefaultKey: doc}
			}
			s := configMap(data, key)
			s.Kind = "Secret"
			_, err := FromSource(s)
			if err == nil {
				t.Errorf("FromSource(%.40q) accepted the document", doc)
				continue
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error leaks the value: %q", err)
			}
			var se *SourceError
			if !errors.As(err, &se) || se.Source != "Secret team-a/app-values" {
				t.Errorf("error %q does not name the source", err)
			}
		}
	}
	// The flat form never parses, so the only error it has names the key alone.
	s := Source{Kind: "Secret", Name: "s", Data: map[string][]byte{"token": []byte(secret + "\xff")}}
	if _, err := FromSource(s); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("flat form: err = %v", err)
	}
	// Nor do rendering errors.
	if _, _, err := Render(map[string]any{"password": secret, "bad": make(chan int)}); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Render: err = %v", err)
	}
}

func TestCountDocuments(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want int
	}{
		{"", 0}, {"# c\n", 0}, {"---\n", 0}, {"a: 1", 1}, {"---\na: 1\n", 1}, {"%YAML 1.1\n---\na: 1\n", 1},
		{"a: 1\n---\n", 1}, {"a: 1\n...\n", 1}, {"--- {a: 1}", 1}, {"--- # c\na: 1", 1},
		{"a: |\n  ---\n  x\n", 1}, {"a: 1\n----\n", 1}, {"a: 1\n---x\n", 1},
		{"a: 1\n---\nb: 1\n", 2}, {"a: 1\r\n---\r\nb: 1\r\n", 2}, {"--- 1\n--- 2\n", 2}, {"a: 1\n...\nb: 2\n", 2},
	} {
		if got := countDocuments([]byte(tc.doc)); got != tc.want {
			t.Errorf("countDocuments(%q) = %d, want %d", tc.doc, got, tc.want)
		}
	}
}
