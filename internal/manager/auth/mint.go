package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Minted is a token Mint made, with the id and expiry it carries.
type Minted struct {
	// Token is the signed JWT.
	Token string
	// ID is its jti claim: 128 random bits, base64url (22 characters), unique to this token, so
	// that it can be revoked on its own (DELETE /api/v1/session).
	ID string
	// ExpiresAt is its exp claim (whole seconds).
	ExpiresAt time.Time
}

// Mint signs an HS256 token for subject with roles (claim "roles"; use EnvironmentOwnerOf for
// an environment owner), valid from now for ttl, issued by MintIssuer, with a unique id (jti).
// For `manager token`, session tokens and tests. Unknown roles are an error here, unlike in Verify.
func Mint(secret []byte, subject string, roles []Role, ttl time.Duration, now time.Time) (string, error) {
	m, err := MintToken(secret, subject, roles, ttl, now)
	if err != nil {
		return "", err
	}
	return m.Token, nil
}

// MintToken is Mint returning the token's id and expiry too.
func MintToken(secret []byte, subject string, roles []Role, ttl time.Duration, now time.Time) (*Minted, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("auth: HS256 secret is %d bytes; it must be at least %d", len(secret), MinSecretBytes)
	}
	if strings.TrimSpace(subject) == "" {
		return nil, errors.New("auth: token subject is empty")
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("auth: token lifetime %s must be positive", ttl)
	}
	names := make([]string, 0, len(roles))
	for _, r := range roles {
		role, env, err := parseRole(string(r))
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		if env != "" {
			names = append(names, string(EnvironmentOwnerOf(env)))
		} else {
			names = append(names, string(role))
		}
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("auth: token id: %w", err)
	}
	m := &Minted{ID: base64.RawURLEncoding.EncodeToString(id), ExpiresAt: time.Unix(now.Add(ttl).Unix(), 0).UTC()}
	claims := jwt.MapClaims{
		"iss":            MintIssuer,
		"sub":            subject,
		"jti":            m.ID,
		"iat":            now.Unix(),
		"nbf":            now.Unix(),
		"exp":            m.ExpiresAt.Unix(),
		DefaultRoleClaim: names,
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return nil, err
	}
	m.Token = tok
	return m, nil
}
