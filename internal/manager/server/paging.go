package server

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// page is a list request's limit and position. The continue token is opaque to clients: the
// base64url of the last key of the previous page.
type page struct {
	Limit int
	After string
}

func pageFrom(r *http.Request) (page, error) {
	q := r.URL.Query()
	p := page{Limit: store.DefaultLimit}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			return p, errInvalid("limit", "must be a number from 1 to %d", store.MaxLimit)
		}
		p.Limit = n
	}
	if v := q.Get("continue"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || len(b) == 0 {
			return p, errInvalid("continue", "is not a continue token of this API")
		}
		p.After = string(b)
	}
	return p, nil
}

// continueToken is the token for the page after one that returned n items ending at lastKey.
func (p page) continueToken(n int, lastKey string) string {
	if n < p.Limit || lastKey == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(lastKey))
}

// oneOf checks an optional query value against the allowed ones.
func oneOf(r *http.Request, name string, allowed []string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", errInvalid(name, "must be one of %v, not %q", allowed, v)
}
