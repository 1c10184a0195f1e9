package values

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Merge layers values the way Helm layers values files: a later layer wins; where both layers
// hold a mapping under the same key the mappings merge recursively; any other value, lists
// included, replaces what was there; and an explicit null deletes the key, so nulls never appear
// in the result (they are kept inside lists, which are values like any other). A null therefore
// removes what an earlier layer set, but does not reach the chart's own defaults.
//
// Merge does not modify its inputs and shares no mapping or list with them: the result is the
// caller's to change. With no layers it returns an empty map.
func Merge(layers ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, layer := range layers {
		mergeInto(out, layer)
	}
	return out
}

// mergeInto merges src into dst, which Merge owns.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			dst[k] = copyValue(v)
			continue
		}
		d, ok := dst[k].(map[string]any)
		if !ok {
			d = make(map[string]any, len(m))
			dst[k] = d
		}
		mergeInto(d, m)
	}
}

// copyValue deep-copies the mappings and lists of a value.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	default:
		return v
	}
}

// Render returns values as YAML with mapping keys sorted (in go-yaml's natural order, where
// digit runs compare as numbers: "9" before "10"), and the hex SHA-256 of that YAML, so equal
// values always give equal bytes and an equal hash. Nil or empty values render as "{}".
//
// Values must be what FromSource and Merge produce (mappings, lists, strings, booleans,
// json.Number and other JSON-encodable numbers), nested at most MaxDepth levels, with mapping
// keys of at most MaxKeyLength characters and none that is "<<". What FromSource accepts always
// renders. The error for anything else names the Go
// type at most, never a value.
func Render(v map[string]any) (yamlDoc []byte, hash string, err error) {
	if v == nil {
		v = map[string]any{}
	}
	if reason := checkShape(v, 1); reason != "" {
		return nil, "", errors.New("rendering values: " + reason)
	}
	j, err := encodeJSON(v)
	if err != nil {
		return nil, "", fmt.Errorf("rendering values: %s", describeRenderError(err))
	}
	out, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, "", fmt.Errorf("rendering values: %s", describeRenderError(err))
	}
	sum := sha256.Sum256(out)
	return out, hex.EncodeToString(sum[:]), nil
}

// encodeJSON encodes v as JSON, as sigs.k8s.io/yaml.Marshal does before converting to YAML,
// but without escaping <, > and & (which only lengthens keys) and with the characters YAML
// cannot carry raw escaped.
func encodeJSON(v any) ([]byte, error) {
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return escapeNonPrintable(j.Bytes()), nil
}

// MaxKeyLength is how long a mapping key may be, in characters of its JSON form (quotes and
// escapes included): the YAML parser that turns the JSON into YAML reads no longer implicit
// key. Only a key of more than 170 characters can exceed it.
const MaxKeyLength = 1024

// MaxDepth is how deeply mappings and lists may nest, the top-level mapping being the first
// level. Rendered YAML indents every level, so its size grows with the square of the depth: 64
// levels bounds that growth to a small multiple of the input.
const MaxDepth = 64

// checkShape returns why v, at nesting level depth, cannot be rendered, or "".
func checkShape(v any, depth int) string {
	switch v := v.(type) {
	case map[string]any:
		if depth > MaxDepth {
			return fmt.Sprintf("values nest deeper than %d levels", MaxDepth)
		}
		for k, e := range v {
			if k == "<<" {
				// go-yaml writes this key unquoted, which every YAML reader takes for a merge key.
				return `a mapping key is "<<", which YAML would read as a merge key`
			}
			if jsonKeyLength(k) > MaxKeyLength {
				return fmt.Sprintf("a mapping key of %d bytes is too long (at most %d characters, escapes counted)", len(k), MaxKeyLength)
			}
			if reason := checkShape(e, depth+1); reason != "" {
				return reason
			}
		}
	case []any:
		if depth > MaxDepth {
			return fmt.Sprintf("values nest deeper than %d levels", MaxDepth)
		}
		for _, e := range v {
			if reason := checkShape(e, depth+1); reason != "" {
				return reason
			}
		}
	}
	return ""
}

// jsonKeyLength is the length in characters of k as a JSON string, counting an escape sequence
// of \u form for every character that may be escaped at all.
func jsonKeyLength(k string) int {
	if len(k) <= (MaxKeyLength-2)/6 {
		return len(k) + 2 // short enough whatever it holds
	}
	n := 2
	for i := 0; i < len(k); {
		r, size := utf8.DecodeRuneInString(k[i:])
		switch {
		case r == '"' || r == '\\':
			n += 2
		case r < 0x20 || r == utf8.RuneError || r == 0x2028 || r == 0x2029 || nonPrintable(r):
			n += 6
		default:
			n++
		}
		i += size
	}
	return n
}

// nonPrintable reports the characters that JSON leaves raw but YAML does not allow raw anywhere:
// DEL, the C1 controls, U+FFFE and U+FFFF.
func nonPrintable(r rune) bool {
	return r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0xfffe || r == 0xffff
}

// describeRenderError says why values could not be rendered without repeating any of them.
func describeRenderError(err error) string {
	var typeErr *json.UnsupportedTypeError
	var valueErr *json.UnsupportedValueError
	var marshalerErr *json.MarshalerError
	switch {
	case errors.As(err, &typeErr):
		return "a value has the unsupported type " + typeErr.Type.String()
	case errors.As(err, &valueErr):
		return "a value is not representable (a NaN or infinite number, or a cycle)"
	case errors.As(err, &marshalerErr):
		return "a value of type " + marshalerErr.Type.String() + " failed to marshal"
	default:
		return "values are not representable as YAML"
	}
}

// escapeNonPrintable escapes, in JSON text, the characters that JSON leaves raw but YAML does not
// allow raw anywhere (DEL, the C1 controls, U+FFFE and U+FFFF), so the YAML parser that
// converts the JSON to YAML reads them as escapes instead of rejecting the text. They can only
// occur inside JSON strings, and valid UTF-8 (which json.Marshal always writes) has no other
// byte sequence they could be confused with.
func escapeNonPrintable(j []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(j); {
		r, size := utf8.DecodeRune(j[i:])
		if nonPrintable(r) {
			out = append(out, j[last:i]...)
			out = fmt.Appendf(out, `\u%04x`, r)
			last = i + size
		}
		i += size
	}
	if out == nil {
		return j
	}
	return append(out, j[last:]...)
}
