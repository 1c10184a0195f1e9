package auth

import (
	"errors"
	"net/http"
	"strings"
)

// ErrNoToken means the request carried no Authorization header, or one that is not
// "Bearer <token>". The API answers it with 401.
var ErrNoToken = errors.New("missing or malformed Authorization header: want \"Bearer <token>\"")

// TokenError is a token that was presented and refused. Reason is safe to return in a 401: it
// never holds the token or any part of it.
type TokenError struct {
	Reason string
}

func (e *TokenError) Error() string { return "invalid token: " + e.Reason }

// Reasons a token is refused.
const (
	ReasonMalformed   = "malformed token"
	ReasonTooLarge    = "token too large"
	ReasonAlgorithm   = "signing algorithm not allowed"
	ReasonSignature   = "signature invalid"
	ReasonExpired     = "token expired"
	ReasonNoExpiry    = "token has no exp claim"
	ReasonNotYetValid = "token not valid yet"
	ReasonIssuedLater = "token issued in the future"
	ReasonIssuer      = "wrong issuer"
	ReasonAudience    = "wrong audience"
	ReasonNoSubject   = "token has no sub claim"
	ReasonClaims      = "token claims invalid"
	ReasonKeysMissing = "signing keys unavailable"
)

func tokenError(reason string) error { return &TokenError{Reason: reason} }

// maxTokenBytes bounds what is parsed at all; real tokens are a few KiB at most.
const maxTokenBytes = 16 << 10

// FromRequest returns the bearer token of r's Authorization header (the scheme matched
// case-insensitively), or ErrNoToken.
func FromRequest(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	scheme, raw, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoToken
	}
	raw = strings.TrimSpace(raw)
	if raw == "" || strings.ContainsAny(raw, " \t") {
		return "", ErrNoToken
	}
	return raw, nil
}
