package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// DefaultKey is the key read when a source names no key and has one by this name.
const DefaultKey = "values.yaml"

// MaxDocumentSize is the largest YAML document FromSource parses, in bytes (1 MiB).
const MaxDocumentSize = 1 << 20

var (
	// ErrKeyNotFound is matched (errors.Is) by the error for a source that lacks the key it was
	// asked for.
	ErrKeyNotFound = errors.New("key not found")
	// ErrInvalid is matched (errors.Is) by the error for a source whose content is not usable
	// values: malformed YAML, not a single mapping, too large, nested too deeply, a key that
	// cannot be rendered, or not UTF-8 text.
	ErrInvalid = errors.New("invalid values")
)

// Source is one entry of spec.converge.valuesFrom, already fetched by the caller.
type Source struct {
	// Kind is "ConfigMap" or "Secret".
	Kind string
	// Namespace and Name identify the object.
	Namespace, Name string
	// Key is the key holding a YAML document of values, or "" for the default behaviour
	// (see FromSource).
	Key string
	// Data is a ConfigMap's data and binaryData, or a Secret's data.
	Data map[string][]byte
}

// String identifies the source in messages, e.g. "Secret team-a/db".
func (s Source) String() string {
	kind := s.Kind
	if kind == "" {
		kind = "source"
	}
	if s.Namespace == "" {
		return kind + " " + s.Name
	}
	return kind + " " + s.Namespace + "/" + s.Name
}

// SourceError is a source that could not be read into values. Its message holds only the
// identity of the source, the key and a reason built from fixed phrases, key names, sizes and
// line numbers: never a value.
type SourceError struct {
	// Source identifies the object, e.g. "ConfigMap team-a/app".
	Source string
	// Key is the key involved, "" when the data as a whole is meant.
	Key string
	// Reason says what is wrong, e.g. `line 3: mapping values are not allowed in this context`.
	Reason string

	kind error // ErrKeyNotFound or ErrInvalid
}

// Error implements error.
func (e *SourceError) Error() string {
	if e.Key == "" {
		return e.Source + ": " + e.Reason
	}
	return fmt.Sprintf("%s: key %q: %s", e.Source, e.Key, e.Reason)
}

// Is makes errors.Is match ErrKeyNotFound or ErrInvalid.
func (e *SourceError) Is(target error) bool { return target == e.kind }

// FromSource reads one source into values:
//
//   - With Key set, that key must exist (else ErrKeyNotFound) and hold a YAML mapping.
//   - Without Key, a "values.yaml" key is read as a YAML mapping and other keys are ignored.
//   - Otherwise every key becomes a top-level value holding its content as a string; keys and
//     contents must be UTF-8 text.
//
// An empty document, or one that is only null or comments, gives no values. A document over
// MaxDocumentSize, one that is not a mapping, a text with more than one YAML document, values
// nested deeper than MaxDepth, or a mapping key longer than MaxKeyLength or spelt "<<" (quoted,
// as a merge key is resolved while reading) is ErrInvalid. What FromSource returns always renders;
// it is a fresh map the caller owns.
func FromSource(s Source) (map[string]any, error) {
	fail := func(key, reason string, kind error) error {
		return &SourceError{Source: s.String(), Key: key, Reason: reason, kind: kind}
	}
	key := s.Key
	if key == "" {
		if _, ok := s.Data[DefaultKey]; !ok {
			out := make(map[string]any, len(s.Data))
			for k, v := range s.Data {
				if !utf8.ValidString(k) {
					return nil, fail(k, "key is not UTF-8 text", ErrInvalid)
				}
				if !utf8.Valid(v) {
					return nil, fail(k, "value is not UTF-8 text; name a key holding a YAML document instead", ErrInvalid)
				}
				out[k] = string(v)
			}
			if reason := checkShape(out, 1); reason != "" {
				return nil, fail("", reason, ErrInvalid)
			}
			return out, nil
		}
		key = DefaultKey
	}
	doc, ok := s.Data[key]
	if !ok {
		return nil, fail(key, "not found", ErrKeyNotFound)
	}
	v, reason := parse(doc)
	if reason != "" {
		return nil, fail(key, reason, ErrInvalid)
	}
	return v, nil
}

// useNumber makes the JSON decoder keep numbers as json.Number.
func useNumber(d *json.Decoder) *json.Decoder {
	d.UseNumber()
	return d
}

// parse reads a YAML document that must be a mapping. It returns the values or, when the
// document is unusable, a reason that holds no part of the document.
func parse(doc []byte) (map[string]any, string) {
	if len(doc) > MaxDocumentSize {
		return nil, fmt.Sprintf("document is %d bytes, over the limit of %d (1 MiB)", len(doc), MaxDocumentSize)
	}
	if n := countDocuments(doc); n > 1 {
		return nil, fmt.Sprintf("holds %d YAML documents (separated by ---), want a single mapping", n)
	}
	var v any
	if err := yaml.Unmarshal(doc, &v, useNumber); err != nil {
		return nil, "invalid YAML: " + describeYAMLError(err)
	}
	switch v := v.(type) {
	case nil:
		return map[string]any{}, ""
	case map[string]any:
		if reason := checkShape(v, 1); reason != "" {
			return nil, reason
		}
		return v, ""
	case []any:
		return nil, "document is a YAML list, want a mapping"
	case string:
		return nil, "document is a YAML string, want a mapping"
	case bool:
		return nil, "document is a YAML boolean, want a mapping"
	case json.Number:
		return nil, "document is a YAML number, want a mapping"
	default:
		return nil, "document is not a YAML mapping"
	}
}

// markerLine matches a line that starts a YAML document (---) or ends one (...). At the start
// of a line these are document markers wherever they appear: no scalar can contain them.
var markerLine = regexp.MustCompile(`^(---|\.\.\.)([ \t].*)?\r?$`)

// countDocuments counts the YAML documents of a stream that hold anything but blank lines,
// comments and directives. It splits at document markers the way a YAML parser does for
// well-formed streams; a malformed stream may be miscounted, and the parser then reports it.
func countDocuments(doc []byte) int {
	n := 0
	content := false
	for line := range bytes.Lines(doc) {
		line = bytes.TrimRight(line, "\n")
		if m := markerLine.FindSubmatch(line); m != nil {
			if content {
				n++
			}
			// Content may follow "---" on the same line: "--- {a: 1}".
			rest := bytes.TrimSpace(m[2])
			content = string(m[1]) == "---" && len(rest) > 0 && rest[0] != '#'
			continue
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && t[0] != '%' {
			content = true
		}
	}
	if content {
		n++
	}
	return n
}

// yamlProblems are the parser's fixed descriptions of what is wrong, which hold no part of the
// document and may be repeated. Problems not listed here are reported as "malformed YAML".
var yamlProblems = map[string]bool{
	"block sequence entries are not allowed in this context":       true,
	"mapping keys are not allowed in this context":                 true,
	"mapping values are not allowed in this context":               true,
	"could not find expected ':'":                                  true,
	"did not find expected ',' or ']'":                             true,
	"did not find expected ',' or '}'":                             true,
	"did not find expected '-' indicator":                          true,
	"did not find expected <document start>":                       true,
	"did not find expected alphabetic or numeric character":        true,
	"did not find expected comment or line break":                  true,
	"did not find expected hexdecimal number":                      true,
	"did not find expected key":                                    true,
	"did not find expected node content":                           true,
	"did not find expected whitespace or line break":               true,
	"did not find URI escaped octet":                               true,
	"found a tab character that violates indentation":              true,
	"found a tab character where an indentation space is expected": true,
	"found an indentation indicator equal to 0":                    true,
	"found character that cannot start any token":                  true,
	"found unexpected document indicator":                          true,
	"found unexpected end of stream":                               true,
	"found unknown escape character":                               true,
	"found invalid Unicode character escape code":                  true,
	"found undefined tag handle":                                   true,
	"found incompatible YAML document":                             true,
	"found unexpected non-alphabetical character":                  true,
	"found unknown directive name":                                 true,
	"found duplicate %YAML directive":                              true,
	"found duplicate %TAG directive":                               true,
	"control characters are not allowed":                           true,
	"invalid leading UTF-8 octet":                                  true,
	"invalid trailing UTF-8 octet":                                 true,
	"invalid length of a UTF-8 sequence":                           true,
	"incomplete UTF-8 octet sequence":                              true,
	"invalid Unicode character":                                    true,
	"incomplete UTF-16 character":                                  true,
	"incomplete UTF-16 surrogate pair":                             true,
	"expected low surrogate area":                                  true,
	"unexpected low surrogate area":                                true,
	"document contains excessive aliasing":                         true,
	"map merge requires map or sequence of maps as the value":      true,
	"!!binary value contains invalid base64 data":                  true,
}

// yamlProblemPrefixes rewrite problems whose text embeds part of the document.
var yamlProblemPrefixes = []struct{ prefix, problem string }{
	{"unknown anchor ", "an alias refers to an unknown anchor"},
	{"anchor ", "an anchor's value contains an alias to itself"},
	{"exceeded max depth", "nested too deeply"},
	{"invalid map key", "a mapping key is a list or mapping"},
	{"cannot decode ", "a value does not fit its explicit tag"},
}

// errorLine takes the line number the parser reports ("yaml: line 3: ...").
var errorLine = regexp.MustCompile(`^line ([0-9]+): `)

// describeYAMLError turns an error of sigs.k8s.io/yaml into a description that holds no part of
// the document: the line when the parser gives one, and the kind of problem from a fixed list.
func describeYAMLError(err error) string {
	var unsupported *json.UnsupportedValueError
	if errors.As(err, &unsupported) {
		return "a number is NaN or infinite"
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	if strings.HasPrefix(msg, "unsupported map key") {
		return "a mapping key is null or not a scalar"
	}
	rest, ok := strings.CutPrefix(msg, "yaml: ")
	if !ok {
		return "malformed YAML"
	}
	where := ""
	if m := errorLine.FindStringSubmatch(rest); m != nil {
		where = "line " + m[1] + ": "
		rest = rest[len(m[0]):]
	}
	if yamlProblems[rest] {
		return where + rest
	}
	for _, p := range yamlProblemPrefixes {
		if strings.HasPrefix(rest, p.prefix) {
			return where + p.problem
		}
	}
	return where + "malformed YAML"
}
