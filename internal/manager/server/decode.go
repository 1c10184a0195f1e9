package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// decodeJSON reads one JSON object from the request body into v: the body must be JSON, at most
// the server's limit, with no unknown fields and nothing after the object. Every failure is a 4xx
// naming the field (or the position) that is wrong.
func (s *Server) decodeJSON(r *http.Request, v any) error {
	body, err := s.readBody(r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	return decodeBody(body, v)
}

// decodeOptional is decodeJSON for a body that may be left out: an empty body leaves v as it is.
func (s *Server) decodeOptional(r *http.Request, v any) error {
	body, err := s.readBody(r, s.cfg.MaxBodyBytes)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return err
	}
	return decodeBody(body, v)
}

// readBody reads the request body: JSON by its Content-Type (when given), at most limit bytes
// (413 beyond).
func (s *Server) readBody(r *http.Request, limit int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, &Error{Status: http.StatusUnsupportedMediaType, Code: api.CodeUnsupported,
				Message: fmt.Sprintf("Content-Type %q is not JSON: send application/json", ct)}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeTooLarge,
				Message: fmt.Sprintf("request body larger than %d bytes", limit),
				Details: map[string]any{"limit": limit}}
		}
		return nil, &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Message: "reading the request body failed", Err: err}
	}
	return body, nil
}

// decodeBody is decodeJSON's parser, separate so that it can be fuzzed.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errInvalid("", "the request body is empty: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return errInvalid("", "unexpected data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errInvalid("", "unexpected data after the JSON object")
	}
	return nil
}

func jsonError(err error) *Error {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		return errInvalid("", "malformed JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error())
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return errInvalid("", "the body must be a JSON object, not %s", typeErr.Value)
		}
		return errInvalid(field, "must be %s, not %s", jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errInvalid("", "malformed JSON: the body ends early")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errInvalid(field, "unknown field")
	}
	return errInvalid("", "malformed JSON: %s", err.Error())
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int64", "int32", "uint", "uint64", "uint32", "float64", "float32":
		return "a number"
	}
	return kind
}
